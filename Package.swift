// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "bleadvd",
    products: [
        .library(name: "DBus", targets: ["DBus"]),
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

        .testTarget(name: "DBusTests", dependencies: ["DBus"], exclude: ["Peers"]),
    ]
)

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(contentsOf: [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ])
    target.swiftSettings = settings
}
