import AdvertiserDaemon
import PeripheralMocks
import Testing

/// SIGTERM's clean-up, on the daemon's injected clock.
@Suite("the daemon's shutdown")
struct ShutdownTests {
    @Test("shutdown gives up on a bluetoothd that never answers, in time to exit within 2 s", .timeLimit(.minutes(3)))
    func shutdownGivesUpOnAHungBluetoothd() async throws {
        let session = try await DaemonSession()
        session.mock.scriptStop(.neverAnswers)

        session.stop()
        await session.clock.waitForSleepers()
        session.clock.advance(by: Daemon<ManualClock>.stopWait)
        try await session.running.value

        #expect(session.mock.stopAdvertisingCallCount == 1)
        // What is left of the 2 s is the process's exit.
        #expect(Daemon<ManualClock>.stopWait <= .milliseconds(1500))
    }
}
