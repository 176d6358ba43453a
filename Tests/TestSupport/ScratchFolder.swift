public import Foundation

/// A fresh temporary folder of a test's own, removed when the value goes away.
public final class ScratchFolder: Sendable {
    /// Where it is.
    public let url: URL

    /// Makes one, named `bleadvd-PREFIX-UUID`, readable by other users (the unprivileged caller
    /// of a policy test).
    public init(_ prefix: String = "scratch") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("bleadvd-\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}
