// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "bleadvd",
    products: [
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "Peripheral", targets: ["Peripheral"]),
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

        // Benchmarks (not installed): `make bench-dbus`.
        .target(name: "CDBusBenchLoop", dependencies: ["CDBus"], path: "Benchmarks/CDBusBenchLoop"),
        .executableTarget(
            name: "dbus-bench",
            dependencies: ["DBus", "CDBusBenchLoop"],
            path: "Benchmarks/dbus-bench"
        ),

        .testTarget(name: "DBusTests", dependencies: ["DBus"], exclude: ["Peers"]),
        .testTarget(name: "PeripheralTests", dependencies: ["Peripheral"]),
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
