// swift-tools-version: 6.1
// `make fuzz`: libFuzzer on the config parser, the advertisement validation and AD encoder, GATT
// value decoding, and the D-Bus message reader, built apart so that the main package's build and tests never see
// -sanitize=fuzzer. See docs/RELIABILITY.md.
import Foundation
import PackageDescription

// A path dependency is known by its folder's name, which is the clone's (main, ci, ...).
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "bleadvd-fuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "fuzz-config",
            dependencies: ["FuzzDriver", .product(name: "AdvertiserConfig", package: root)]
        ),
        .executableTarget(
            name: "fuzz-advertisement",
            dependencies: ["FuzzDriver", .product(name: "Peripheral", package: root)]
        ),
        .executableTarget(
            name: "fuzz-gatt-value",
            dependencies: ["FuzzDriver", .product(name: "Peripheral", package: root)]
        ),
        .executableTarget(
            name: "fuzz-message",
            dependencies: ["FuzzDriver", .product(name: "DBus", package: root)]
        ),
    ]
)
