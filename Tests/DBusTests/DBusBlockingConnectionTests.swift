import Testing
import TestSupport

@testable import DBus

/// The blocking connection `bleadvctl` uses, against the dbus-python peer.
@Suite("Blocking calls through a real bus", .timeLimit(.minutes(3)))
struct DBusBlockingConnectionTests {
    @Test("every type, nested, survives a blocking round trip through the bus and dbus-python")
    func everyTypeRoundTrips() async throws {
        let session = try await BlockingSession()
        let connection = session.connection

        let echoed = try connection.callPeer("EchoAll", Fixtures.everyType)

        #expect(echoed == Fixtures.everyType)
    }

    @Test("an error reply keeps the peer's error name and message")
    func errorReply() async throws {
        let session = try await BlockingSession()
        let connection = session.connection

        let error = #expect(throws: DBusError.self) { try connection.callPeer("Fail", [.string("nope")]) }

        #expect(error == DBusError("test.Peer.Error.Refused", "nope"))
    }

    @Test("a reply with an unexpected signature is an error naming both signatures")
    func unexpectedReplySignature() async throws {
        let session = try await BlockingSession()
        let connection = session.connection

        let error = #expect(throws: DBusError.self) { try connection.callPeer("Number", expecting: "s") }

        #expect(error?.message == "reply to test.Peer.Number has signature 'i', expected 's'")
    }

    @Test("a call that outlives its timeout fails with NoReply and the next call works")
    func callTimeout() async throws {
        let session = try await BlockingSession()
        let connection = session.connection

        let error = #expect(throws: DBusError.self) {
            try connection.callPeer("Sleep", [.uint32(5_000)], timeout: .milliseconds(200))
        }
        let after = try connection.callPeer("Number", expecting: "i")

        #expect(error?.name == .noReply)
        #expect(after == [.int32(42)])
    }

    @Test("a name nobody owns is ServiceUnknown, as bleadvctl reports a daemon that is not running")
    func unknownDestination() async throws {
        let bus = try await PrivateBus()
        let connection = try DBusBlockingConnection(bus: .address(bus.address))

        let error = #expect(throws: DBusError.self) {
            try connection.call(destination: "org.example.Nobody", path: "/", interface: "org.example.Nobody", member: "Hi")
        }

        #expect(error?.name == .serviceUnknown)
    }

    @Test("a bus that is not there is an error, not an abort")
    func noBus() {
        let error = #expect(throws: DBusError.self) {
            try DBusBlockingConnection(bus: .address("unix:path=/nonexistent/bleadvd-test-bus"))
        }

        #expect(error?.message.contains("/nonexistent/bleadvd-test-bus") == true)
    }

    @Test("a signal is refused by call() before anything is sent")
    func signalIsNotACall() async throws {
        let bus = try await PrivateBus()
        let connection = try DBusBlockingConnection(bus: .address(bus.address))

        let error = #expect(throws: DBusError.self) {
            try connection.call(.signal(path: "/x", interface: "test.X", member: "Y", body: []))
        }

        #expect(error?.name == .invalidArgs)
    }

}

/// A private bus, the Python peer on it, and a blocking connection.
private struct BlockingSession {
    let bus: PrivateBus
    let peer: PythonPeer
    let connection: DBusBlockingConnection

    init() async throws {
        bus = try await PrivateBus()
        peer = try await PythonPeer(bus: bus)
        connection = try DBusBlockingConnection(bus: .address(bus.address))
    }
}

extension DBusBlockingConnection {
    /// Calls a method of the Python peer.
    func callPeer(
        _ member: String, _ arguments: [DBusValue] = [], expecting: DBusSignature? = nil,
        timeout: Duration = DBusConnection.defaultTimeout
    ) throws -> [DBusValue] {
        try call(
            destination: PythonPeer.name, path: Fixtures.peerPath, interface: PythonPeer.interface, member: member,
            arguments, expecting: expecting, timeout: timeout)
    }
}
