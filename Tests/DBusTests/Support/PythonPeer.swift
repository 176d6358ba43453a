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

    init(bus: PrivateBus) async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Peers/peer.py")
        (process, uniqueName) = try await startPeer(script.path, [bus.address], calling: "peer")
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
        bus = try await PrivateBus()
        peer = try await PythonPeer(bus: bus)
        connection = try await DBusConnection.connect(to: bus)
    }
}
