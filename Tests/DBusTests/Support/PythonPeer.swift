import Foundation
import TestSupport

@testable import DBus

/// The test peer in `Peers/peer.py`, written with dbus-python (libdbus + GLib, not our code),
/// owning `test.peer` on a private bus with an object at `/peer`.
final class PythonPeer: @unchecked Sendable {
    static let name = "test.peer"
    static let interface = "test.Peer"
    let process: Child
    let uniqueName: String

    init(bus: PrivateBus) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Peers/peer.py")
        process = try Child("/usr/bin/python3", [script.path, bus.address], captureErrors: false)
        let line = try PrivateBus.readLine(from: process.stdout)
        guard line.hasPrefix("ready ") else { throw TestFailure("peer said \(line)") }
        uniqueName = String(line.dropFirst("ready ".count))
    }

    /// Stops the peer, as a crash would: its name vanishes from the bus.
    func stop() {
        process.terminate()
    }
}

/// The usual arrangement of a client test: a private bus, the Python peer on it, and one of our
/// connections.
struct PeerSession {
    let bus: PrivateBus
    let peer: PythonPeer
    let connection: DBusConnection

    init() async throws {
        bus = try PrivateBus()
        peer = try PythonPeer(bus: bus)
        connection = try await DBusConnection.connect(to: bus)
    }
}
