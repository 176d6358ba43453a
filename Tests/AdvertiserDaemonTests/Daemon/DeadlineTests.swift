import AdvertiserConfig
import AdvertiserDaemon
import DBus
import Foundation
import Logging
import Peripheral
import PeripheralBlueZ
import PeripheralMocks
import TestSupport
import Testing

/// READY and exit come on time whatever BlueZ does: the deadlines hold on the injected clock
/// against a BlueZ that never answers and a client that ignores cancellation.
@Suite("The daemon's deadlines", .timeLimit(.minutes(3)))
struct DeadlineTests {
    @Test("READY comes after readyWait when BlueZ never answers a registration")
    func readyHoldsAgainstAHungBlueZ() async throws {
        let session = try await DaemonSession(waitForReady: false) { $0.scriptStart(.neverAnswers) }
        await session.clock.waitForSleepers()

        session.clock.advance(by: Daemon<ManualClock>.readyWait)
        try await session.notify.waitFor("READY=1")

        #expect(session.notify.messages.contains { $0.contains("STATUS=still trying after 15.0 seconds: 0 of 1") })
    }

    @Test("stop returns within stopWait while a control call waits on a BlueZ that never answers")
    func stopHoldsWhileAControlCallHoldsTheModule() async throws {
        let session = try await DaemonSession()
        session.mock.scriptStart(.neverAnswers)
        // The stuck call holds the daemon only: holding the session would keep its private bus
        // (a dbus-daemon) alive past the test, and the process.
        let daemon = session.daemon
        let stuck = Task { try await daemon.advertising.on(["door"]) }
        try await eventually("a second advertisement is started", every: .milliseconds(1)) { session.mock.startAdvertisingCallCount >= 2 }

        session.stop()
        await session.clock.waitForSleepers()
        session.clock.advance(by: Daemon<ManualClock>.stopWait)
        let outcome = await session.running.result

        #expect(throws: Never.self) { try outcome.get() }
        #expect(session.mock.stopAdvertisingCallCount == 0)
        stuck.cancel()
    }

    @Test("READY and stop keep their deadlines against a BlueZ stand-in that stops answering")
    func deadlinesHoldAgainstAFrozenBluetoothd() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        _ = try await connection.call(destination: "org.bluez", path: "/test", interface: "test.StandIn", member: "Hang")
        let notify = try NotifySocket(in: bus.folder)
        let clock = ManualClock()
        let config = try ConfigParser.parse("[advertisement.heart]\nlocal_name = \"Thermo-1\"\n", file: "test.toml")
        let daemon = Daemon(
            config: config, configPath: "test.toml", manager: BlueZPeripheralManager(connection: connection),
            bus: DBusControlBus(connection: connection), clock: clock, notifier: SystemdNotifier(environment: ["NOTIFY_SOCKET": notify.path]),
            loadConfig: { path throws(ConfigError) in try ConfigParser.load(path: path) }, logger: Logger(label: "test"))
        let (requests, post) = AsyncStream<Daemon<ManualClock>.Request>.makeStream()
        let running = Task { try await daemon.run(requests: requests) }
        await clock.waitForSleepers()

        clock.advance(by: Daemon<ManualClock>.readyWait)
        try await notify.waitFor("READY=1")
        post.yield(.stop)
        await clock.waitForSleepers()
        clock.advance(by: Daemon<ManualClock>.stopWait)
        try await running.value

        #expect(notify.messages.contains { $0.contains("STATUS=still trying after") })
        _ = standIn
    }
}
