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
    public init(bus: PrivateBus, adapters: [String] = ["hci0"]) throws {
        process = try Child("/usr/bin/python3", [Self.script.path, bus.address] + adapters, captureErrors: false)
        let line = try PrivateBus.readLine(from: process.stdout)
        guard line.hasPrefix("ready ") else { throw TestFailure("stand-in said \(line)") }
        uniqueName = String(line.dropFirst("ready ".count))
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

