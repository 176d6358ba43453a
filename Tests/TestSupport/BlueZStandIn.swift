public import Foundation

/// `Peers/bluez_standin.py` on a private bus: owns org.bluez and behaves like bluetoothd
/// 5.66 toward an advertiser (see the script). Driven through its control object at `/test`.
public final class BlueZStandIn: @unchecked Sendable {
    /// The stand-in's process.
    public let process: Child
    /// Its unique name on the bus, which stays its own after it gives up org.bluez.
    public let uniqueName: String

    /// The stand-in's script.
    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Peers/bluez_standin.py")

    /// Starts a stand-in owning org.bluez on `bus`, with the named adapters (none: none until AddAdapter).
    /// Python's start takes seconds on a loaded machine: it is awaited on a thread of its own,
    /// never on one of the cooperative pool's (``PrivateBus/init(systemPolicy:activatable:)``).
    public init(bus: PrivateBus, adapters: [String] = ["hci0"]) async throws {
        (process, uniqueName) = try await startPeer(Self.script.path, [bus.address] + adapters, calling: "stand-in")
    }

    /// The command line that starts a stand-in with `adapters` when the bus activates org.bluez
    /// (``PrivateBus/init(systemPolicy:activatable:)``), touching `marker` first.
    public static func activation(adapters: [String], marker: URL) -> String {
        "/bin/sh -c 'touch \(marker.path); exec /usr/bin/python3 \(script.path) --activated \(adapters.joined(separator: " "))'"
    }

    /// Kills bluetoothd's stand-in, as `kill -9` would: org.bluez vanishes, nothing is released.
    public func crash() {
        process.kill(SIGKILL)
    }
}

/// Starts the Python peer `script` with `arguments` on a thread of its own, and waits there for
/// its first line, "ready UNIQUE-NAME": its process and its unique name on the bus.
public func startPeer(_ script: String, _ arguments: [String], calling role: String) async throws -> (Child, String) {
    try await offThePool {
        let process = try Child("/usr/bin/python3", [script] + arguments, captureErrors: false)
        let line = try PrivateBus.readLine(from: process.stdout)
        guard line.hasPrefix("ready ") else { throw TestFailure("\(role) said \(line)") }
        return (process, String(line.dropFirst("ready ".count)))
    }
}
