@testable import AdvertiserDaemon
import AdvertiserConfig
import BluetoothModule
import DBus
import Events
import Foundation
import Logging
import Peripheral
import PeripheralMocks
import Synchronization
import TestSupport
import Testing

/// The telemetry component on the manual clock: what its port is given, and when; then through
/// the values component over the module and the mock, what BlueZ is given.
@Suite("The Eddystone-TLM component", .timeLimit(.minutes(3)))
struct TelemetryComponentTests {
    static let config = """
        [advertisement.uid.eddystone_uid]
        namespace = "00112233445566778899"
        instance = "aabbccddeeff"
        tx_power = -20

        [advertisement.tlm.eddystone_tlm]
        battery_mv = 3000
        temperature = 21.5
        update_seconds = 10
        """
    /// The system's uptime the component is given.
    static let uptime = Duration.seconds(1000)

    final class Port: TelemetryShowing {
        let clock: ManualClock
        /// When the advertisement went on air (the clock's offset); nil: it is not on air.
        let onAirAt = Mutex<Duration?>(.zero)
        /// Whether it is wanted on air when it is not.
        let coming = Mutex(true)
        let shown = Mutex<[String]>([])
        init(clock: ManualClock) { self.clock = clock }
        func air(_ name: String) async -> TelemetryAir {
            if let at = onAirAt.withLock({ $0 }) { return .on(clock.now.offset - at) }
            return coming.withLock { $0 } ? .coming : .off
        }
        func show(counters: EddystoneTLM.Counters, in name: String) async {
            shown.withLock { $0.append("\(name) \(counters.advertisingCount) \(counters.uptimeTenths)") }
        }
        var all: [String] { shown.withLock { $0 } }
    }

    struct Harness {
        let clock: ManualClock
        let port: Port
        let loop: EventLoop
        let telemetry: Telemetry<ManualClock>
        let running: Task<Void, Never>

        init(_ text: String = TelemetryComponentTests.config, onAir: Bool = true, coming: Bool = true) throws {
            clock = ManualClock()
            port = Port(clock: clock)
            if !onAir { port.onAirAt.withLock { $0 = nil } }
            port.coming.withLock { $0 = coming }
            loop = try EventLoop.onNewThread(name: "telemetry-test")
            let config = try ConfigParser.parse(text, file: "test.toml")
            telemetry = Telemetry(
                advertisements: config.advertisements, port: port, clock: clock, uptime: TelemetryComponentTests.uptime,
                logger: Logger(label: "test"), executor: loop)
            running = Task { [telemetry] in await telemetry.run() }
        }

        /// The next update's sleep is let pass after `seconds`, and its show awaited.
        func after(_ seconds: Int, shown count: Int) async throws {
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(seconds))
            try await eventually("update \(count) was shown") { port.all.count == count }
        }
    }

    @Test("a TLM advertisement's counters go on air at once: the system's uptime in tenths of a second, no frame sent yet")
    func atOnce() async throws {
        let h = try Harness()
        defer { h.running.cancel() }

        try await eventually("the first update was shown") { h.port.all.count == 1 }

        #expect(h.port.all == ["tlm 0 10000"])
    }

    @Test("every update_seconds the counters rise: one frame per 1.28 s interval, the uptime by the time passed")
    func everyPeriod() async throws {
        let h = try Harness()
        defer { h.running.cancel() }
        try await eventually("the first update was shown") { h.port.all.count == 1 }

        try await h.after(10, shown: 2)
        try await h.after(10, shown: 3)

        #expect(h.port.all == ["tlm 0 10000", "tlm 7 10100", "tlm 15 10200"])
    }

    @Test("an advertisement on its way to the air is not updated and is looked at again a second later; on air, its count starts then")
    func countsFromOnAir() async throws {
        let h = try Harness(onAir: false)
        defer { h.running.cancel() }
        await h.clock.waitForSleepers(1)
        let retry = h.clock.deadlines

        h.port.onAirAt.withLock { $0 = .seconds(0) }
        h.clock.advance(by: .seconds(1))
        try await eventually("the update was shown") { h.port.all.count == 1 }

        #expect(retry == [ManualClock.Instant(offset: .seconds(1))])
        #expect(h.port.all == ["tlm 0 10010"])
    }

    @Test("an advertisement turned off is looked at again at its next update, not every second")
    func offWaitsItsPeriod() async throws {
        let h = try Harness(onAir: false, coming: false)
        defer { h.running.cancel() }

        await h.clock.waitForSleepers(1)

        #expect(h.clock.deadlines == [ManualClock.Instant(offset: .seconds(10))])
        #expect(h.port.all.isEmpty)
    }

    @Test("a reload that keeps the TLM advertisement keeps its count; one that removes it ends its updates")
    func reload() async throws {
        let h = try Harness()
        defer { h.running.cancel() }
        try await eventually("the first update was shown") { h.port.all.count == 1 }
        try await h.after(10, shown: 2)
        let kept = try ConfigParser.parse(Self.config.replacingOccurrences(of: "temperature = 21.5", with: "temperature = 30"), file: "test.toml")
        let removed = try ConfigParser.parse("[advertisement.uid.eddystone_url]\nurl = \"https://a.io\"\ntx_power = 0\n", file: "test.toml")

        await h.telemetry.reconfigure(kept.advertisements)
        try await h.after(10, shown: 3)
        await h.telemetry.reconfigure(removed.advertisements)

        #expect(h.port.all.last == "tlm 15 10200")
        #expect(await h.telemetry.beacons.isEmpty)
        #expect(h.clock.deadlines.isEmpty)
    }

    @Test("no TLM advertisement, no timer: the component costs nothing idle")
    func noTimerWithoutTLM() async throws {
        let h = try Harness("[advertisement.uid.eddystone_url]\nurl = \"https://a.io\"\ntx_power = 0\n")
        defer { h.running.cancel() }

        await h.telemetry.update()

        #expect(h.port.all.isEmpty)
        #expect(h.clock.deadlines.isEmpty)
    }

    @Test("through the values component, BlueZ is given the frame with the counters and a temperature set since")
    func throughValues() async throws {
        let mock = MockPeripheralManager()
        mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0", address: "54:48:E6:8F:80:A5")])))
        mock.scriptStart(.always(.success(RegistrationID("/org/bleadvd/advertisement/tlm"))))
        mock.scriptUpdate(.always(.success(())))
        mock.scriptReregister(.always(.success(false)))
        mock.scriptAudit(.always(.success([])))
        let clock = ManualClock()
        let loop = try EventLoop.onNewThread(name: "telemetry-values-test")
        let config = try ConfigParser.parse(Self.config, file: "test.toml")
        let module = BluetoothModule(manager: mock, clock: clock, counters: MockCounters(), auditDelay: nil)
        let values = Values(
            advertisements: config.advertisements, services: config.services, module: module, clock: clock, logger: Logger(label: "test"),
            executor: loop)
        await module.configure(await values.advertisements)
        try await module.on("tlm")
        let running = Task { [values] in await values.run() }
        defer { running.cancel() }
        try await values.change("tlm", ["temperature": .string("22.25")])
        try await eventually("the set reached the module") { mock.calls.updated.count == 1 }

        await values.show(counters: EddystoneTLM.Counters(advertisingCount: 7, uptimeTenths: 10_100), in: "tlm")

        let frame = mock.calls.updated.last?.advertisement.serviceData.first?.data ?? []
        #expect(Hex.encode(frame) == "2000" + "0bb8" + "1640" + "00000007" + "00002774")
    }
}
