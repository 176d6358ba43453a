import Testing
import TestSupport

@testable import DBus

/// Our client against objects exported by an independent implementation (dbus-python).
@Suite("Client calls through a real bus", .timeLimit(.minutes(3)))
struct DBusClientTests {
    @Test("every type, nested, survives a round trip through the bus and dbus-python")
    func everyTypeRoundTrips() async throws {
        let session = try await PeerSession()
        let connection = session.connection

        let echoed = try await connection.callPeer("EchoAll", Fixtures.everyType)

        #expect(echoed == Fixtures.everyType)
    }

    @Test("a variant comes back with the same inner type it was sent with", arguments: [
        DBusValue.byte(7), .int16(-7), .uint64(7), .double(0.25), .objectPath("/x"), .bytes([]),
        .strings(["é"]), .variantDictionary(["k": .int32(1)]),
    ])
    func variantKeepsItsType(value: DBusValue) async throws {
        let session = try await PeerSession()
        let connection = session.connection

        let echoed = try await connection.callPeer("Echo", [.variant(value)], expecting: "v")

        #expect(echoed == [.variant(value)])
    }

    @Test("a peer that calls back into the caller before replying gets its answer and the caller its reply")
    func callBackDuringCall() async throws {
        let session = try await PeerSession()
        let connection = session.connection
        try await connection.export([DBusInterface(name: "test.Client1", methods: [
            DBusMethod("Shout", inputs: [DBusArgument("text", .string)], outputs: [DBusArgument("loud", .string)]) { call in
                [.string(call.arguments[0].string!.uppercased())]
            },
        ])], at: "/client")

        let reply = try await connection.callPeer(
            "CallBack", [.string("test.Client1"), .objectPath("/client"), .string("hi")], expecting: "s",
            timeout: .seconds(5))

        #expect(reply == [.string("called back: HI")])
    }

    @Test("an error reply keeps the peer's error name and message")
    func errorReply() async throws {
        let session = try await PeerSession()
        let connection = session.connection

        let error = await #expect(throws: DBusError.self) { try await connection.callPeer("Fail", [.string("nope")]) }

        #expect(error == DBusError("test.Peer.Error.Refused", "nope"))
    }

    @Test("a reply with an unexpected signature is an error naming both signatures")
    func unexpectedReplySignature() async throws {
        let session = try await PeerSession()
        let connection = session.connection

        let error = await #expect(throws: DBusError.self) { try await connection.callPeer("Number", expecting: "s") }

        #expect(error?.name == .invalidArgs)
        #expect(error?.message == "reply to test.Peer.Number has signature 'i', expected 's'")
    }

    @Test("a call that outlives its timeout fails with NoReply and the connection keeps working")
    func callTimeout() async throws {
        let session = try await PeerSession()
        let connection = session.connection

        let error = await #expect(throws: DBusError.self) {
            try await connection.callPeer("Sleep", [.uint32(5_000)], timeout: .milliseconds(200))
        }
        let after = try await connection.callPeer("Number", expecting: "i")

        #expect(error?.name == .noReply)
        #expect(after == [.int32(42)])
    }

    @Test("a short timeout fires while a longer one is pending, before the longer call's reply (one timer serves all calls)")
    func shortTimeoutBehindLongOne() async throws {
        let session = try await PeerSession()
        let connection = session.connection
        let finished = Recorder<Bool>()
        let long = Task {
            _ = try? await connection.callPeer("Sleep", [.uint32(10_000)], timeout: .seconds(20))
            await finished.record(true)
        }
        _ = try await connection.callPeer("Number", expecting: "i")

        let error = await #expect(throws: DBusError.self) {
            try await connection.callPeer("Sleep", [.uint32(5_000)], timeout: .milliseconds(200))
        }
        let longStillPending = await finished.values.isEmpty

        #expect(error?.name == .noReply)
        // Ordered, not timed: the short call gave up while the long one (reply in 10 s,
        // timeout 20 s) was still waiting, so it had a timer of its own to fire.
        #expect(longStillPending)
        long.cancel()
    }

    @Test("a peer that vanishes in the middle of a call fails the call, not the process")
    func peerVanishesMidCall() async throws {
        let session = try await PeerSession()
        let connection = session.connection

        let error = await #expect(throws: DBusError.self) { try await connection.callPeer("Vanish", timeout: .seconds(10)) }
        let stillUp = try await connection.nameOwner(DBusConnection.busName)

        #expect(error?.name == .noReply)
        #expect(stillUp == DBusConnection.busName)
    }

    @Test("input libdbus would abort on is refused before it is sent, and the connection stays usable")
    func invalidInputIsRefused() async throws {
        let bus = try await PrivateBus()
        let connection = try await DBusConnection.connect(to: bus)
        let bad: [DBusMessage] = [
            .methodCall(destination: "test.peer", path: "/peer", interface: "test.Peer", member: "Bad.Member"),
            .methodCall(destination: "test.peer", path: "/peer", interface: "noDots", member: "Echo"),
            .methodCall(destination: "not a name", path: "/peer", interface: "test.Peer", member: "Echo"),
            .methodCall(destination: "test.peer", path: "/peer", interface: "test.Peer", member: "Echo",
                        body: [.string("nul\u{0}inside")]),
            .methodCall(destination: "test.peer", path: "/peer", interface: "test.Peer", member: "Echo",
                        body: [.array(.string, [.int32(1)])]),
        ]

        for message in bad {
            let error = await #expect(throws: DBusError.self) { try await connection.call(message) }
            #expect(error?.name == .invalidArgs || error?.name == .invalidSignature)
        }
        let stillUp = try await connection.nameOwner(DBusConnection.busName)

        #expect(stillUp == DBusConnection.busName)
    }

    @Test("killing the bus daemon fails the pending call, reports disconnected and refuses later calls")
    func busDaemonKilled() async throws {
        let session = try await PeerSession()
        let connection = session.connection
        var events = await connection.events().makeAsyncIterator()
        let pending = Task { try await connection.callPeer("Sleep", [.uint32(20_000)], timeout: .seconds(30)) }
        _ = try await connection.nameOwner(PythonPeer.name)

        session.bus.stop()
        let event = await events.next()
        let pendingResult = await pending.result
        let later = await #expect(throws: DBusError.self) { try await connection.nameOwner(PythonPeer.name) }

        #expect(event == .disconnected)
        #expect(throws: DBusError.self) { try pendingResult.get() }
        #expect(later?.name == .disconnected)
        #expect(await connection.isConnected == false)
    }

    @Test("a cancelled call stops waiting at once")
    func cancelledCall() async throws {
        let session = try await PeerSession()
        let connection = session.connection

        let task = Task { try await connection.callPeer("Sleep", [.uint32(20_000)], timeout: .seconds(30)) }
        task.cancel()
        let result = await task.result

        #expect(throws: CancellationError.self) { try result.get() }
    }
}

