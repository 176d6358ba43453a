import Testing
import TestSupport

@testable import DBus

/// ``DBusProxy`` against the Python peer's object, whose properties dbus-python serves through
/// `org.freedesktop.DBus.Properties` (`Peers/peer.py`): not our export code at the other end.
@Suite("A proxy for another peer's object", .timeLimit(.minutes(3)))
struct DBusProxyTests {
    static func proxy(_ session: PeerSession) -> DBusProxy {
        DBusProxy(session.connection, destination: PythonPeer.name, path: Fixtures.peerPath)
    }

    @Test("one property comes back as its value, out of the variant it travels in")
    func readsOneProperty() async throws {
        let session = try await PeerSession()

        let level = try await Self.proxy(session).property("Level", of: PythonPeer.interface)

        #expect(level == .int32(3))
    }

    @Test("every property of an interface comes back by name")
    func readsEveryProperty() async throws {
        let session = try await PeerSession()

        let properties = try await Self.proxy(session).properties(of: PythonPeer.interface)

        #expect(properties == ["Name": .string("peer"), "Level": .int32(3)])
    }

    @Test("a property set through the proxy is the value the peer then gives")
    func setsAProperty() async throws {
        let session = try await PeerSession()
        let proxy = Self.proxy(session)

        try await proxy.setProperty("Level", of: PythonPeer.interface, to: .int32(9))

        #expect(try await proxy.property("Level", of: PythonPeer.interface) == .int32(9))
    }

    @Test("the peer's refusal of a property reaches the caller as the peer's error")
    func refusalIsThePeersError() async throws {
        let session = try await PeerSession()

        let error = await #expect(throws: DBusError.self) {
            try await Self.proxy(session).property("Missing", of: PythonPeer.interface)
        }

        #expect(error?.name == "org.freedesktop.DBus.Error.UnknownProperty")
    }

    @Test("a method called through the proxy reaches the peer's object")
    func callsAMethod() async throws {
        let session = try await PeerSession()

        let reply = try await Self.proxy(session).call(PythonPeer.interface, "Number", expecting: "i")

        #expect(reply == [.int32(42)])
    }
}
