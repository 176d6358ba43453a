@testable import AdvertiserDaemon
import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import DBus
import Events
import Logging
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// The events component in process, through its port (the values component over the module
/// and the mock) on the manual clock: what each update handed BlueZ, in order.
@Suite("The BTHome events component", .timeLimit(.minutes(3)))
struct BTHomeEventsTests {
    static let config = """
        [advertisement.remote.bthome]
        battery = 80
        buttons = 2
        event_seconds = 1

        [advertisement.kitchen.bthome]
        temperature = 21.5
        """

    struct Harness {
        let mock = MockPeripheralManager()
        let clock = ManualClock()
        let loop: EventLoop
        let module: BluetoothModule<ManualClock>
        let values: Values<ManualClock>
        let events: BTHomeEvents<ManualClock>
        let running: [Task<Void, Never>]

        init(_ text: String = BTHomeEventsTests.config) async throws {
            mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0", address: "54:48:E6:8F:80:A5")])))
            mock.scriptStart(.always(.success(RegistrationID("/org/bleadvd/advertisement/remote"))))
            mock.scriptUpdate(.always(.success(())))
            mock.scriptReregister(.always(.success(false)))
            mock.scriptStop(.always(.success(())))
            mock.scriptAudit(.always(.success([])))
            loop = try EventLoop.onNewThread(name: "events-test")
            let config = try ConfigParser.parse(text, file: "test.toml")
            module = BluetoothModule(manager: mock, clock: clock, counters: MockCounters(), auditDelay: nil)
            values = Values(
                advertisements: config.advertisements, services: config.services, module: module, clock: clock,
                logger: Logger(label: "test"), executor: loop)
            events = BTHomeEvents(port: values, clock: clock, logger: Logger(label: "test"), executor: loop)
            await module.configure(await values.advertisements)
            try await module.on("remote")
            running = [Task { [values] in await values.run() }, Task { [events] in await events.run() }]
        }

        func stop() {
            for task in running { task.cancel() }
        }

        /// The BTHome objects of each update BlueZ was given, packet id first, in order.
        var sent: [[UInt8]] {
            mock.calls.updated.map { Array(($0.advertisement.serviceData.first?.data ?? []).dropFirst()) }
        }

        /// The burst under way ends: its sleep is let pass.
        func burstEnds(_ count: Int) async throws {
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(1))
            try await eventually("update \(count) reached the module") { mock.calls.updated.count == count }
        }
    }

    @Test("an event goes to BlueZ at once with a new packet id, and the values alone with another when its burst ends")
    func burst() async throws {
        let h = try await Harness()
        defer { h.stop() }

        let queued = try await h.events.event("remote", ["button": "long_press"])
        try await eventually("the event reached the module") { h.mock.calls.updated.count == 1 }
        try await h.burstEnds(2)

        #expect(queued == EventQueued(ahead: 0, burstSeconds: 1))
        #expect(h.sent == [[0x00, 1, 0x01, 80, 0x3A, 0x04, 0x3A, 0x00], [0x00, 2, 0x01, 80]])
    }

    @Test("events given during a burst wait in order, each on air for a burst of its own with its own packet id")
    func queued() async throws {
        let h = try await Harness()
        defer { h.stop() }

        _ = try await h.events.event("remote", ["button": "press"])
        try await eventually("the first event reached the module") { h.mock.calls.updated.count == 1 }
        let second = try await h.events.event("remote", ["button.2": "double_press"])
        let third = try await h.events.event("remote", ["button": "triple_press"])
        try await h.burstEnds(2)
        try await h.burstEnds(3)
        try await h.burstEnds(4)

        #expect([second.ahead, third.ahead] == [1, 2])
        #expect(h.sent == [
            [0x00, 1, 0x01, 80, 0x3A, 0x01, 0x3A, 0x00], [0x00, 2, 0x01, 80, 0x3A, 0x00, 0x3A, 0x02],
            [0x00, 3, 0x01, 80, 0x3A, 0x03, 0x3A, 0x00], [0x00, 4, 0x01, 80],
        ])
    }

    @Test("a value set during a burst leaves the event's packet as it is, and goes with the burst's end")
    func setDuringBurst() async throws {
        let h = try await Harness()
        defer { h.stop() }

        _ = try await h.events.event("remote", ["button": "press"])
        try await eventually("the event reached the module") { h.mock.calls.updated.count == 1 }
        try await h.values.change("remote", ["battery": .double(75)])
        try await eventually("the set's sender stood down, the event on air") { await h.values.entries["remote"]?.values.sending == false }
        let duringBurst = h.mock.calls.updated.count
        try await h.burstEnds(2)

        #expect(duringBurst == 1)
        #expect(h.sent.count == 2)
        #expect(h.sent.last.map { [$0[0]] + Array($0.dropFirst(2)) } == [0x00, 0x01, 75])
    }

    @Test("past 32 waiting, an event is refused, saying so; none is dropped")
    func waitingLimit() async throws {
        let h = try await Harness()
        defer { h.stop() }

        for _ in 0...BTHomeEvents<ManualClock>.waitingLimit {
            _ = try await h.events.event("remote", ["button": "press"])
        }
        let error = await #expect(throws: PeripheralError.self) { try await h.events.event("remote", ["button": "press"]) }

        #expect(error?.message.contains("remote: 33 events wait already") == true, "\(error?.message ?? "")")
    }

    @Test("an event for a sensor without buttons, one that is off, or no sensor at all is refused, saying why", arguments: [
        ("kitchen", "kitchen has no buttons or dimmers; declare them in its [advertisement.kitchen.bthome] table, e.g. buttons = 1"),
        ("garage", "no advertisement named \"garage\""),
    ])
    func refusals(name: String, message: String) async throws {
        let h = try await Harness()
        defer { h.stop() }

        let error = await #expect(throws: PeripheralError.self) { try await h.events.event(name, ["button": "press"]) }

        #expect(error?.message == message)
        #expect(h.mock.calls.updated.isEmpty)
    }

    @Test("an event for a sensor that is off is refused: it would reach no one")
    func offRefused() async throws {
        let h = try await Harness()
        defer { h.stop() }
        try await h.module.off("remote")

        let error = await #expect(throws: PeripheralError.self) { try await h.events.event("remote", ["button": "press"]) }

        #expect(error?.message == "remote is off: an event would reach no one; bleadvctl on remote first")
    }

    @Test("an encrypted sensor's event is sealed as its readings are: it opens with the key and the adapter's address, with a new counter")
    func encryptedEvent() async throws {
        let key = "231d39c1d7cc1ab1aee224cd096db932"
        let h = try await Harness("[advertisement.remote.bthome]\nbuttons = 1\nencryption_key = \"\(key)\"\n")
        defer { h.stop() }

        _ = try await h.events.event("remote", ["button": "double_press"])
        try await eventually("the event reached the module") { h.mock.calls.updated.count == 1 }
        let sealed = try #require(h.mock.calls.updated.first?.advertisement.serviceData.first?.data)
        let opened = BTHome.open(sealed, key: try #require(BTHome.Key(hex: key)), address: [0x54, 0x48, 0xE6, 0x8F, 0x80, 0xA5])

        #expect(opened == [0x41, 0x00, 0x01, 0x3A, 0x02])
        #expect(sealed.first == 0x41)
    }
}
