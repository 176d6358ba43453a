import AdvertiserDaemon
import DBus
import Dispatch
import PeripheralMocks
import TestSupport
import Testing

/// WATCHDOG=1 means the daemon and its bus connection answer: systemd restarts a daemon that
/// is stuck in either.
@Suite("The watchdog", .timeLimit(.minutes(1)))
struct WatchdogTests {
    @Test("WATCHDOG=1 is sent every half interval, after a round trip through the daemon and the bus")
    func pingsWhenHealthy() async throws {
        let session = try await DaemonSession(watchdog: .seconds(2))
        await session.clock.waitForSleepers()

        session.clock.advance(by: .seconds(1))

        try await session.notify.waitFor("WATCHDOG=1")
    }

    @Test("a heartbeat fails when the connection's queue is stuck")
    func stuckConnectionStopsThePings() async throws {
        let session = try await DaemonSession()
        let release = DispatchSemaphore(value: 0)
        await stall(session.connection, until: release)
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

    @Test("a heartbeat succeeds when both answer")
    func heartbeatWhenHealthy() async throws {
        let session = try await DaemonSession()

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
