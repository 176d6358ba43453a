@testable import AdvertiserDaemon
import BluetoothModule
import DBus
import Dispatch
import PeripheralMocks
import TestSupport
import Testing

/// WATCHDOG=1 means the daemon, its module and its bus connection answer: systemd restarts a
/// daemon that is stuck in any. A stalled actor holds its session's event loop (all three run
/// there, as in bleadvd) until its test releases it; the heartbeat's timer runs on the test's
/// task, as the watchdog's own runs on the loop.
@Suite("The watchdog", .timeLimit(.minutes(3)))
struct WatchdogTests {
    @Test("WATCHDOG=1 is sent every half interval, after a round trip through the daemon and the bus")
    func pingsWhenHealthy() async throws {
        let session = try await DaemonSession(watchdog: .seconds(2))
        await session.clock.waitForSleepers()

        session.clock.advance(by: .seconds(1))

        try await session.notify.waitFor("WATCHDOG=1")
    }

    @Test("a heartbeat fails when the connection's event loop is stuck")
    func stuckConnectionStopsThePings() async throws {
        let session = try await DaemonSession(onDBus: true)
        let release = DispatchSemaphore(value: 0)
        await stall(try #require(session.connection), until: release)
        defer { release.signal() }

        async let beat = session.daemon.heartbeat(within: .seconds(1))
        await session.clock.waitForSleepers()
        session.clock.advance(by: .seconds(1))

        #expect(await beat == false)
    }

    @Test("a heartbeat fails when the daemon's actor is stuck")
    func stuckDaemonStopsThePings() async throws {
        let session = try await DaemonSession()
        let release = DispatchSemaphore(value: 0)
        await stall(session.daemon, until: release)
        defer { release.signal() }

        async let beat = session.daemon.heartbeat(within: .seconds(1))
        await session.clock.waitForSleepers()
        session.clock.advance(by: .seconds(1))

        #expect(await beat == false)
    }

    @Test("a heartbeat fails when the module's actor is stuck (a state file that blocked, say)")
    func stuckModuleStopsThePings() async throws {
        let session = try await DaemonSession()
        let release = DispatchSemaphore(value: 0)
        await stall(session.daemon.module, until: release)
        defer { release.signal() }

        async let beat = session.daemon.heartbeat(within: .seconds(1))
        await session.clock.waitForSleepers()
        session.clock.advance(by: .seconds(1))

        #expect(await beat == false)
    }

    @Test("a heartbeat succeeds when both answer")
    func heartbeatWhenHealthy() async throws {
        let session = try await DaemonSession(onDBus: true)

        let beat = await session.daemon.heartbeat(within: .seconds(1))

        #expect(beat)
    }

    /// Blocks `actor`'s executor until `release` is signalled; returns once it is blocked.
    private func stall(_ actor: some Stallable, until release: DispatchSemaphore) async {
        await withCheckedContinuation { (blocked: CheckedContinuation<Void, Never>) in
            Task.detached { await actor.block(then: { blocked.resume() }, until: release) }
        }
    }
}

/// An actor whose executor a test can hold.
private protocol Stallable: Actor {
    func block(then started: @Sendable () -> Void, until release: DispatchSemaphore)
}

extension Stallable {
    func block(then started: @Sendable () -> Void, until release: DispatchSemaphore) {
        started()
        release.wait()
    }
}

extension DBusConnection: Stallable {}
extension Daemon: Stallable {}
extension BluetoothModule: Stallable {}
