import AdvertiserDaemon
import DBus
import Peripheral
import PeripheralMocks
import Testing

/// What the daemon does when it cannot start as it should.
@Suite("The daemon's start", .timeLimit(.minutes(3)))
struct StartTests {
    @Test("when BlueZ's events cannot be watched, the daemon fails instead of running deaf to bluetoothd restarts")
    func eventsThatCannotBeWatchedFailTheStart() async throws {
        let session = try await DaemonSession(waitForReady: false) {
            $0.failEvents(with: PeripheralError(.accessDenied, "the bus refused AddMatch"))
        }

        let outcome = await session.running.result

        #expect(throws: DaemonFailure(
            "cannot watch BlueZ on the system bus, so advertisements could not be restored after bluetoothd restarts: the bus refused AddMatch"
        )) { try outcome.get() }
        #expect(session.mock.startAdvertisingCallCount == 0)
    }

    @Test("a second daemon on the same bus fails, naming the first")
    func nameTakenFailsTheStart() async throws {
        let first = try await DaemonSession(onDBus: true)

        let second = try await DaemonSession(bus: try first.bus, waitForReady: false)
        let outcome = await second.running.result

        let failure = #expect(throws: DaemonFailure.self) { try outcome.get() }
        #expect(failure?.description == "another bleadvd is running: the name org.bleadvd.Advertiser is already owned by \(first.connection!.uniqueName)")
    }
}
