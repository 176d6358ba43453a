// swift-tools-version: 6.1
// `make fuzz`: libFuzzer on bleadvd's parsers, built apart so that the main package's build
// and tests never see -sanitize=fuzzer. See docs/RELIABILITY.md.
import Foundation
import PackageDescription

// A path dependency is known by its folder's name, which is the clone's (main, ci, ...).
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

let package = Package(
    name: "bleadvd-fuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "fuzz-config",
            dependencies: [.product(name: "AdvertiserConfig", package: root)]
        ),
    ]
)
