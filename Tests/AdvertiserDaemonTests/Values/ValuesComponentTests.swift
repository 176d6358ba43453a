@testable import AdvertiserDaemon
import AdvertiserConfig
import BluetoothModule
import DBus
import Events
import Logging
import Peripheral
import PeripheralMocks
import Synchronization
import TestSupport
import Testing

/// The values component in process, through its ports: the module over the mock, an announcer
/// that records, the manual clock. No bus: what reaches a client over D-Bus is SetTests' and
/// ServiceTests'.
@Suite("The values component", .timeLimit(.minutes(3)))
struct ValuesComponentTests {
    typealias Component = Values<ManualClock>
    static let level = GATTCharacteristicID(service: "dial", characteristic: "level")

    /// What the component announced, in order: `values NAME key=value...` and
    /// `written SERVICE.CHARACTERISTIC VALUE`.
    final class Announcements: ValuesAnnouncing {
        let said = Mutex<[String]>([])

        func announceValues(_ name: String, all: [String: String], everyone: [String: String]) async {
            said.withLock { $0.append((["values", name] + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")) }
        }

        func announceWrite(_ id: GATTCharacteristicID, _ value: GATTValue?, secured: Bool, central: String) async {
            said.withLock { $0.append("written \(id) \(value.map(\.description) ?? "(secret)")") }
        }

        var all: [String] { said.withLock { $0 } }
    }

    static let config = """
        [advertisement.kitchen.bthome]
        temperature = 21.5

        [service.dial]
        uuid = "6e400010-b5a3-f393-e0a9-e50e24dcca9e"

        [service.dial.characteristic.level]
        uuid = "6e400011-b5a3-f393-e0a9-e50e24dcca9e"
        format = "uint8"
        flags = ["read", "write"]
        value = 0
        """

    /// The component over a mock on which `kitchen` is on air, running (``Values/run()``) until
    /// ``stop()``.
    struct Harness {
        let mock = MockPeripheralManager()
        let clock = ManualClock()
        let announcements = Announcements()
        let loop: EventLoop
        let values: Component
        let running: Task<Void, Never>

        init(_ text: String = ValuesComponentTests.config) async throws {
            mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0")])))
            mock.scriptStart(.always(.success(RegistrationID("/org/bleadvd/advertisement/kitchen"))))
            mock.scriptUpdate(.always(.success(())))
            mock.scriptAudit(.always(.success([])))
            loop = try EventLoop.onNewThread(name: "values-test")
            let config = try ConfigParser.parse(text, file: "test.toml")
            let module = BluetoothModule(manager: mock, clock: clock, auditDelay: nil)
            values = Component(
                advertisements: config.advertisements, services: config.services, module: module, clock: clock,
                logger: Logger(label: "test"), executor: loop)
            await module.configure(await values.advertisements)
            try await module.on("kitchen")
            await values.announce(to: announcements)
            running = Task { [values] in await values.run() }
        }

        func stop() {
            running.cancel()
        }

        /// Lets the sleeping sender or window wake: the interval passes once one sleeps.
        func intervalPasses() async {
            await clock.waitForSleepers(1)
            clock.advance(by: Component.updateInterval)
        }
    }

    @Test("values set faster than the update interval reach the module twice: the first at once, the newest when the interval ends")
    func setsAreCoalesced() async throws {
        let h = try await Harness()
        defer { h.stop() }

        try await h.values.change("kitchen", ["temperature": .double(22.0)])
        try await eventually("the first set reached the module") { h.mock.calls.updated.count == 1 }
        try await h.values.change("kitchen", ["temperature": .double(22.5)])
        try await h.values.change("kitchen", ["temperature": .double(23.0)])
        await h.intervalPasses()
        try await eventually("the newest reached the module and was announced") { h.announcements.all.count == 2 }

        #expect(h.mock.calls.updated.count == 2)
        #expect(h.announcements.all == ["values kitchen bthome.temperature=22.0", "values kitchen bthome.temperature=23.0"])
    }

    @Test("a central's writes within the interval are kept at once and announced twice: the first, then the newest")
    func writesAreAnnouncedOncePerInterval() async throws {
        let h = try await Harness()
        defer { h.stop() }

        for level in [1, 2, 3] as [UInt8] {
            await h.values.centralDid(GATTEvent(Self.level, .written([level], .number(Double(level))), central: "AA:BB:CC:DD:EE:01"))
        }
        let kept = await h.values.serviceValues["dial"]?.all["level"]
        await h.intervalPasses()
        try await eventually("the newest write was announced") { h.announcements.all.count == 2 }

        #expect(kept == "3")
        #expect(h.announcements.all == ["written dial.level 1", "written dial.level 3"])
    }

    @Test("a reload that changes a sensor during an event's burst still announces its values when the burst ends")
    func burstEndAnnouncedAfterAReload() async throws {
        let remote = "[advertisement.remote.bthome]\nbattery = 80\nbuttons = 1\n"
        let h = try await Harness(Self.config + "\n" + remote)
        defer { h.stop() }
        try await h.values.show(event: BTHome.Event(buttons: [.press]), in: "remote")
        let changed = try ConfigParser.parse(Self.config + "\n" + remote.split(separator: "80").joined(separator: "70"), file: "test.toml")
        _ = await h.values.reload(advertisements: changed.advertisements)

        try await h.values.show(event: nil, in: "remote")

        #expect(h.announcements.all.filter { $0.hasPrefix("values remote ") }.count == 1)
        #expect(h.announcements.all.first { $0.hasPrefix("values remote ") }?.contains("bthome.battery=70") == true)
    }

    @Test("a write to a characteristic the reloaded file no longer has is neither kept nor announced")
    func writeToRemovedCharacteristicIsIgnored() async throws {
        let h = try await Harness()
        defer { h.stop() }
        await h.values.reload(services: [:])

        await h.values.centralDid(GATTEvent(Self.level, .written([7], .number(7)), central: "AA:BB:CC:DD:EE:01"))

        #expect(await h.values.serviceValues.isEmpty)
        #expect(h.announcements.all.isEmpty)
    }

    @Test("a reload keeps the values set at run time of an advertisement the file left as it was, and starts one it changed from the file")
    func reloadKeepsOrRestarts() async throws {
        let h = try await Harness()
        defer { h.stop() }
        try await h.values.change("kitchen", ["temperature": .double(25.0)])
        let file = try ConfigParser.parse(Self.config, file: "test.toml").advertisements

        _ = await h.values.reload(advertisements: file)
        let kept = await h.values.values(of: "kitchen")["bthome.temperature"]
        let changed = try ConfigParser.parse(Self.config.replacing("21.5", with: "19.0"), file: "test.toml").advertisements
        _ = await h.values.reload(advertisements: changed)

        #expect(kept == "25.0")
        #expect(await h.values.values(of: "kitchen")["bthome.temperature"] == "19.0")
    }
}
