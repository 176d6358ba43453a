import Testing
import TestSupport

@testable import DBus

@Suite("Signals, names and ownership through a real bus", .timeLimit(.minutes(3)))
struct DBusSignalTests {
    @Test("a subscription by well-known sender receives that peer's signal with its unique name")
    func subscriptionByWellKnownSender() async throws {
        let session = try await PeerSession()
        let connection = session.connection
        var ticks = try await connection.signals(matching: DBusMatchRule(
            sender: PythonPeer.name, interface: PythonPeer.interface, member: "Ticked")).makeAsyncIterator()

        _ = try await connection.callPeer("Tick", [.string("one")])
        let signal = await ticks.next()

        #expect(signal?.body == [.string("one")])
        #expect(signal?.sender == session.peer.uniqueName)
        #expect(signal?.path == Fixtures.peerPath)
    }

    @Test("a subscription receives only the signals its own rule matches")
    func subscriptionsAreSeparate() async throws {
        let session = try await PeerSession()
        let connection = session.connection
        var onlyTwo = try await connection.signals(matching: DBusMatchRule(
            interface: PythonPeer.interface, member: "Ticked", arg0: "two")).makeAsyncIterator()
        var all = try await connection.signals(matching: DBusMatchRule(
            interface: PythonPeer.interface, member: "Ticked")).makeAsyncIterator()

        _ = try await connection.callPeer("Tick", [.string("one")])
        _ = try await connection.callPeer("Tick", [.string("two")])
        let firstOfAll = await all.next()
        let firstOfOnlyTwo = await onlyTwo.next()

        #expect(firstOfAll?.body == [.string("one")])
        #expect(firstOfOnlyTwo?.body == [.string("two")])
    }

    @Test("a signal with a quote in arg0 still matches its rule")
    func quotedArg0() async throws {
        let session = try await PeerSession()
        let connection = session.connection
        var ticks = try await connection.signals(matching: DBusMatchRule(
            interface: PythonPeer.interface, member: "Ticked", arg0: "it's")).makeAsyncIterator()

        _ = try await connection.callPeer("Tick", [.string("it's")])
        let signal = await ticks.next()

        #expect(signal?.body == [.string("it's")])
    }

    @Test("signals a stranger addresses to the connection that nothing there takes are not unpacked, however large: only the one a subscription takes is")
    func untakenSignalsNotUnpacked() async throws {
        let bus = try await PrivateBus()
        let connection = try await DBusConnection.connect(to: bus)
        let stranger = try await DBusConnection.connect(to: bus)
        var wanted = try await connection.signals(matching: DBusMatchRule(interface: "org.bleadvd.Test", member: "Wanted")).makeAsyncIterator()
        let large = DBusValue.array(.string, Array(repeating: .string("x"), count: 10_000))

        for _ in 0..<20 {
            try await stranger.emit(path: "/org/bleadvd/Test", interface: "org.bleadvd.Test", member: "Flood", [large], to: connection.uniqueName)
        }
        try await stranger.emit(path: "/org/bleadvd/Test", interface: "org.bleadvd.Test", member: "Wanted", [.string("one")], to: connection.uniqueName)
        let signal = await wanted.next()

        #expect(signal?.body == [.string("one")])
        #expect(await connection.unpackedSignals == 1)
    }

    @Test("requesting a free name makes this connection its owner")
    func requestName() async throws {
        let bus = try await PrivateBus()
        let connection = try await DBusConnection.connect(to: bus)
        let observer = try await DBusConnection.connect(to: bus)

        try await connection.requestName("org.bleadvd.Test")
        let owner = try await observer.nameOwner("org.bleadvd.Test")

        #expect(owner == connection.uniqueName)
    }

    @Test("requesting a name someone owns fails instead of queueing, naming the owner")
    func requestTakenName() async throws {
        let bus = try await PrivateBus()
        let first = try await DBusConnection.connect(to: bus)
        let second = try await DBusConnection.connect(to: bus)
        try await first.requestName("org.bleadvd.Test")

        let error = await #expect(throws: DBusError.self) { try await second.requestName("org.bleadvd.Test") }

        #expect(error?.name == .nameTaken)
        #expect(error?.message == "the name org.bleadvd.Test is already owned by \(first.uniqueName)")
    }

    @Test("a subscription by well-known sender fails when the bus will not say who owns the name")
    func ownerUnknownFailsTheSubscription() async throws {
        let bus = try await PrivateBus.refusingGetNameOwner()
        let connection = try await DBusConnection.connect(to: bus)

        let error = await #expect(throws: DBusError.self) {
            _ = try await connection.signals(matching: DBusMatchRule(sender: "org.bluez", member: "InterfacesAdded"))
        }

        #expect(error?.name == .accessDenied)
    }

    @Test("closing the connection finishes its signal streams")
    func closeFinishesStreams() async throws {
        let bus = try await PrivateBus()
        let connection = try await DBusConnection.connect(to: bus)
        var ticks = try await connection.signals(matching: DBusMatchRule(member: "Ticked")).makeAsyncIterator()

        await connection.close()
        let next = await ticks.next()

        #expect(next == nil)
    }
}
