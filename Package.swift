// swift-tools-version: 6.1
// SPDX-License-Identifier: Apache-2.0 (LICENSE); copyright 2026 bleadvd developers
import PackageDescription

let package = Package(
    name: "bleadvd",
    products: [
        .library(name: "Events", targets: ["Events"]),
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "Peripheral", targets: ["Peripheral"]),
        .library(name: "PeripheralMocks", targets: ["PeripheralMocks"]),
        .library(name: "BluetoothModule", targets: ["BluetoothModule"]),
        .library(name: "PeripheralBlueZ", targets: ["PeripheralBlueZ"]),
        .library(name: "AdvertiserConfig", targets: ["AdvertiserConfig"]),
        .library(name: "AdvertiserControl", targets: ["AdvertiserControl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        // `make docs`: API documentation of the library products (a plugin; nothing is linked).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Layer 0: the C libraries.
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        // OpenSSL's libcrypto, loaded by its first user (C; its header from libssl-dev).
        .target(name: "CCrypto"),

        // bleadvd's process set-up that must come before Swift starts its threads (C).
        .target(name: "CLinux"),

        // epoll, eventfd, timerfd and signalfd for the event loop (C).
        .target(name: "CEvents"),

        // Layer 1: what the layers above share and that is no one's domain: starting a child
        // process (Spawn), one at a time in order (Turnstile), one timer armed (Alarm)...
        .target(name: "Support"),
        // ...the one-thread event loop (a serial and task executor, timers, signals)...
        .target(name: "Events", dependencies: ["CEvents"]),
        // ...and D-Bus for Swift, served on it.
        .target(name: "DBus", dependencies: ["CDBus", "Events"]),

        // Layer 2: the advertising core: the standard library, and libcrypto for BTHome's AES-CCM.
        .target(name: "Peripheral", dependencies: ["CCrypto"]),
        .target(name: "PeripheralMocks", dependencies: ["Peripheral"]),

        // Layer 3: the Linux implementation over BlueZ.
        .target(
            name: "PeripheralBlueZ",
            dependencies: ["Peripheral", "DBus", "Events", .product(name: "Logging", package: "swift-log")]
        ),

        // Layer 3: the domain.
        .target(
            name: "BluetoothModule",
            dependencies: ["Peripheral", "Support", .product(name: "Logging", package: "swift-log")]
        ),

        // Layer 4: the config file and the daemon's D-Bus contract.
        .target(
            name: "AdvertiserConfig",
            dependencies: ["Peripheral", "Support", .product(name: "TOMLKit", package: "TOMLKit")]
        ),

        .target(name: "AdvertiserControl", dependencies: ["DBus", "Peripheral"]),

        // Layer 5: the daemon's work, apart from the process (testable with the mock).
        .target(
            name: "AdvertiserDaemon",
            dependencies: [
                "AdvertiserConfig", "AdvertiserControl", "BluetoothModule", "Peripheral", "DBus", "Support",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // bleadvctl's commands: synchronous clients of the daemon's D-Bus API, and `preview`.
        .target(
            name: "BleadvctlCommands",
            dependencies: [
                "AdvertiserControl", "AdvertiserConfig", "Peripheral", "DBus", "Events", "Support",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/bleadvctl"
        ),

        // The executable: a thin main, and both commands. bleadvctl is a link to bleadvd (one
        // copy of the Swift runtime and Foundation on disk, not two), and runs as bleadvctl when
        // called by that name.
        .executableTarget(
            name: "bleadvd",
            dependencies: [
                "AdvertiserDaemon", "AdvertiserConfig", "PeripheralBlueZ", "DBus", "Events", "CLinux", "Support",
                "BleadvctlCommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Every symbol bound at start (full RELRO): nothing needs the loader's tables in the
            // binary afterwards, and bleadvd drops their pages (CLinux, docs/BENCHMARKS.md).
            linkerSettings: [.unsafeFlags(["-Xlinker", "-z", "-Xlinker", "now"])]
        ),
        // Benchmarks (not installed): `make bench-dbus`.
        .target(name: "CDBusBenchLoop", dependencies: ["CDBus"], path: "Benchmarks/CDBusBenchLoop"),
        .executableTarget(
            name: "dbus-bench",
            dependencies: ["DBus", "Events", "CDBusBenchLoop"],
            path: "Benchmarks/dbus-bench"
        ),

        // Tests: a private bus, child processes, the Python peers.
        .target(
            name: "TestSupport", dependencies: [.product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport", exclude: ["Peers"]
        ),
        // The daemon on an in-memory bus (its ControlBus), as NIOEmbedded serves NIO: the
        // daemon's and the components' behaviour tests run on it, with the mock and the manual
        // clock, and no dbus-daemon.
        .target(
            name: "AdvertiserDaemonTesting",
            dependencies: ["AdvertiserDaemon", "AdvertiserControl", "AdvertiserConfig", "DBus", "Events", "Peripheral"],
            path: "Tests/AdvertiserDaemonTesting"
        ),
        .testTarget(name: "EventsTests", dependencies: ["Events", "TestSupport"]),
        .testTarget(name: "DBusTests", dependencies: ["DBus", "TestSupport"], exclude: ["Peers"]),
        .testTarget(name: "PeripheralTests", dependencies: ["Peripheral", "TestSupport"]),
        .testTarget(name: "SupportTests", dependencies: ["Support", "TestSupport"]),
        .testTarget(name: "BluetoothModuleTests", dependencies: ["BluetoothModule", "PeripheralMocks", "TestSupport"]),
        .testTarget(name: "PeripheralBlueZTests", dependencies: ["PeripheralBlueZ", "BluetoothModule", "PeripheralMocks", "TestSupport"]),
        .testTarget(
            name: "BleadvctlTests",
            dependencies: [
                "AdvertiserControl", "BleadvctlCommands", "DBus", "Peripheral", "TestSupport", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "AdvertiserConfigTests", dependencies: ["AdvertiserConfig", "TestSupport"], exclude: ["Corpus"]),
        .testTarget(
            name: "AdvertiserDaemonTests",
            dependencies: [
                "AdvertiserDaemon", "AdvertiserControl", "AdvertiserConfig", "PeripheralMocks", "PeripheralBlueZ",
                "TestSupport", "AdvertiserDaemonTesting", "Support",
                // Built for the tests, which run it as a program (as bleadvd and as bleadvctl).
                "bleadvd",
            ]
        ),
    ]
)

for target in package.targets where target.type != .system && !["CDBusBenchLoop", "CLinux", "CCrypto", "CEvents"].contains(target.name) {
    var settings = target.swiftSettings ?? []
    settings.append(contentsOf: [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ])
    target.swiftSettings = settings
}
