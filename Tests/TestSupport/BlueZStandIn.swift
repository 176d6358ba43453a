import Foundation

/// `Peers/bluez_standin.py` on a private bus: owns org.bluez and behaves like bluetoothd
/// 5.66 toward an advertiser (see the script). Driven through its control object at `/test`.
public final class BlueZStandIn: @unchecked Sendable {
    /// The stand-in's process.
    public let process: Child

    /// Starts a stand-in owning org.bluez on `bus`, with the named adapters (none: none until AddAdapter).
    public init(bus: PrivateBus, adapters: [String] = ["hci0"]) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Peers/bluez_standin.py")
        process = try Child("/usr/bin/python3", [script.path, bus.address] + adapters, captureErrors: false)
        let line = try PrivateBus.readLine(from: process.stdout)
        guard line.hasPrefix("ready ") else { throw TestFailure("stand-in said \(line)") }
    }

    /// Kills bluetoothd's stand-in, as `kill -9` would: org.bluez vanishes, nothing is released.
    public func crash() {
        process.kill(SIGKILL)
    }
}

