// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "bleadvd",
    products: [
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "Peripheral", targets: ["Peripheral"]),
        .library(name: "PeripheralMocks", targets: ["PeripheralMocks"]),
        .library(name: "BluetoothModule", targets: ["BluetoothModule"]),
        .library(name: "PeripheralBlueZ", targets: ["PeripheralBlueZ"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // Layer 0: the C library.
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),

        // Layer 1: D-Bus for Swift.
        .target(name: "DBus", dependencies: ["CDBus"]),

        // Layer 2: the advertising core, standard library only.
        .target(name: "Peripheral"),
        .target(name: "PeripheralMocks", dependencies: ["Peripheral"]),

        // Layer 3: the Linux implementation over BlueZ.
        .target(
            name: "PeripheralBlueZ",
            dependencies: ["Peripheral", "DBus", .product(name: "Logging", package: "swift-log")]
        ),

        // Layer 3: the domain.
        .target(
            name: "BluetoothModule",
            dependencies: ["Peripheral", .product(name: "Logging", package: "swift-log")]
        ),

        // Benchmarks (not installed): `make bench-dbus`.
        .target(name: "CDBusBenchLoop", dependencies: ["CDBus"], path: "Benchmarks/CDBusBenchLoop"),
        .executableTarget(
            name: "dbus-bench",
            dependencies: ["DBus", "CDBusBenchLoop"],
            path: "Benchmarks/dbus-bench"
        ),

        // Tests: a private bus, child processes, the Python peers.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "TestSupport"], exclude: ["Peers"]),
        .testTarget(name: "PeripheralTests", dependencies: ["Peripheral"]),
        .testTarget(name: "BluetoothModuleTests", dependencies: ["BluetoothModule", "PeripheralMocks"]),
        .testTarget(
            name: "PeripheralBlueZTests", dependencies: ["PeripheralBlueZ", "TestSupport"], exclude: ["StandIn"]),
    ]
)

for target in package.targets where target.type != .system && target.name != "CDBusBenchLoop" {
    var settings = target.swiftSettings ?? []
    settings.append(contentsOf: [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ])
    target.swiftSettings = settings
}
