import Foundation
import TestSupport

/// The bus's own record of the messages on a private bus: systemd's `busctl monitor`, a peer we
/// did not write, with each message's header as the bus delivered it.
final class BusRecord: @unchecked Sendable {
    /// One method call as the bus saw it.
    struct Call {
        var sender: String
        var destination: String
        var member: String
        /// False when the call carried NO_AUTO_START.
        var autoStart: Bool
    }

    private let process: Child

    private init(process: Child) {
        self.process = process
    }

    /// Starts recording; returns once the monitor is on the bus.
    static func start(on bus: PrivateBus) async throws -> BusRecord {
        let process = try Child("/usr/bin/busctl", ["--address=\(bus.address)", "monitor", "--json=short"])
        guard let errors = process.stderr else { throw TestFailure("busctl monitor has no standard error") }
        let line = try await PrivateBus.line(from: errors)
        guard line.hasPrefix("Monitoring") else { throw TestFailure("busctl monitor said \(line)") }
        return BusRecord(process: process)
    }

    /// Stops recording and returns the method calls `sender` made, in order.
    func calls(from sender: String) async throws -> [Call] {
        // The bus delivers in order: a call of ours made now reaches the monitor after the rest.
        try await Task.sleep(for: .milliseconds(200))
        process.terminate()
        let output = String(decoding: process.stdout.readToEndRetrying(), as: UTF8.self)
        return output.split(separator: "\n").compactMap { line -> Call? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["type"] as? String == "method_call", object["sender"] as? String == sender,
                  let destination = object["destination"] as? String, let flags = object["flags"] as? Int
            else { return nil }
            // D-Bus header flag 0x2: NO_AUTO_START.
            return Call(sender: sender, destination: destination, member: object["member"] as? String ?? "", autoStart: flags & 0x2 == 0)
        }
    }
}
