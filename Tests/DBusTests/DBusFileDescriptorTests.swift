import Glibc
import TestSupport
import Testing

@testable import DBus

/// File descriptors passed over a real dbus-daemon (`h`), as BlueZ's `AcquireNotify` takes one.
@Suite("File descriptors over the bus", .timeLimit(.minutes(3)))
struct DBusFileDescriptorTests {
    /// A private bus, a service on it whose `Acquire` returns one end of a socket pair (and 517)
    /// once, the end it kept, and a client.
    struct Acquiring {
        let bus: PrivateBus
        let service: DBusConnection
        let client: DBusConnection
        let kept: DBusFileDescriptor

        /// The client's call of `Acquire`.
        func acquire() async throws -> [DBusValue] {
            try await client.call(destination: service.uniqueName, path: "/test", interface: "test.Sockets1", member: "Acquire")
        }
    }

    static func acquiring() async throws -> Acquiring {
        let bus = try await PrivateBus()
        let service = try await DBusConnection.connect(to: bus)
        let client = try await DBusConnection.connect(to: bus)
        var ends: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &ends) == 0)
        nonisolated(unsafe) var given: DBusFileDescriptor? = DBusFileDescriptor(owning: ends[1])
        try await service.export([DBusInterface(name: "test.Sockets1", methods: [
            DBusMethod("Acquire", outputs: [DBusArgument("fd", .unixFD), DBusArgument("mtu", .uint16)]) { _ in
                defer { given = nil }
                return [.unixFD(given!), .uint16(517)]
            },
        ])], at: "/test")
        return Acquiring(bus: bus, service: service, client: client, kept: DBusFileDescriptor(owning: ends[0]))
    }

    @Test("a socket returned by a method reaches the caller open: what one end writes, the other reads")
    func aReturnedSocketReachesTheCaller() async throws {
        let acquiring = try await Self.acquiring()

        let reply = try await acquiring.acquire()
        guard case .unixFD(let received) = reply[0] else { Issue.record("no descriptor in \(reply)"); return }
        let sent = write(acquiring.kept.fd, "ping", 4)
        var buffer = [UInt8](repeating: 0, count: 8)
        let read = recv(received.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))

        #expect(sent == 4)
        #expect(read == 4)
        #expect(Array(buffer.prefix(4)) == Array("ping".utf8))
        #expect(reply[1] == .uint16(517))
    }

    @Test("the caller's copy closes when its value goes: the other end reads the end of the stream")
    func aReceivedDescriptorClosesWithItsValue() async throws {
        let acquiring = try await Self.acquiring()
        var reply: [DBusValue]? = try await acquiring.acquire()
        #expect(reply?.count == 2)

        reply = nil

        // dbus-daemon closes the copy it passed on in its own time.
        try await eventually("the other end reads the end of the stream") {
            var buffer = [UInt8](repeating: 0, count: 8)
            return recv(acquiring.kept.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 0
        }
    }
}
