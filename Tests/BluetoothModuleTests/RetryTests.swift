import BluetoothModule
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

@Suite("Retrying transient failures on the injected clock")
struct RetryTests {
    static let full = PeripheralError(.noFreeInstance, "Maximum advertisements reached")
    static let refused = PeripheralError(.failed, "Failed to register advertisement")

    @Test("a transient failure is reported to the caller and scheduled 1 s later")
    func transientFailureSchedulesRetry() async {
        let h = await Harness()
        h.mock.scriptStart(.sequence([.failure(Self.full)]))

        let error = await #expect(throws: PeripheralError.self) { try await h.module.on("heart") }

        #expect(error == Self.full)
        #expect(await h.status()?.phase == .retrying(at: ManualClock.Instant(offset: .seconds(1)), failures: 1))
        #expect(await h.status()?.lastError == Self.full)
    }

    @Test("when the retry time comes, the advertisement is registered")
    func retrySucceeds() async {
        let h = await Harness()
        h.mock.scriptStart(.sequence([.failure(Self.full), .success(Harness.heartID)]))
        _ = try? await h.module.on("heart")

        h.clock.advance(by: .seconds(1))
        await h.module.retryDue()

        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
        #expect(await h.status()?.lastError == nil)
    }

    @Test("before the retry time, nothing is tried")
    func noEarlyRetry() async {
        let h = await Harness()
        h.mock.scriptStart(.sequence([.failure(Self.full)]))
        _ = try? await h.module.on("heart")

        h.clock.advance(by: .milliseconds(999))
        await h.module.retryDue()

        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("each further failure doubles the wait")
    func backoffDoubles() async {
        let h = await Harness()
        h.mock.scriptStart(.always(.failure(Self.full)))
        _ = try? await h.module.on("heart")

        h.clock.advance(by: .seconds(1))
        await h.module.retryDue()
        let second = await h.module.nextRetry
        h.clock.advance(by: .seconds(2))
        await h.module.retryDue()
        let third = await h.module.nextRetry

        #expect(second == ManualClock.Instant(offset: .seconds(3)))
        #expect(third == ManualClock.Instant(offset: .seconds(7)))
        #expect(h.mock.startAdvertisingCallCount == 3)
    }

    @Test("the wait is capped at 4 s: what a controller refused for a while is back on air within 5 s of its taking it again")
    func backoffCap() {
        let policy = RetryPolicy.standard

        #expect(policy.delay(afterFailures: 1) == .seconds(1))
        #expect(policy.delay(afterFailures: 2) == .seconds(2))
        #expect(policy.delay(afterFailures: 3) == .seconds(4))
        #expect(policy.delay(afterFailures: 1000) == .seconds(4))
    }

    @Test("no free slot: the wait doubles to 60 s, as a slot taken by another program is no fault of the controller's and a freed one wakes it at once")
    func slotWaitDoublesToAMinute() {
        let policy = RetryPolicy.standard

        #expect(policy.delay(afterFailures: 3, waitingForSlot: true) == .seconds(4))
        #expect(policy.delay(afterFailures: 6, waitingForSlot: true) == .seconds(32))
        #expect(policy.delay(afterFailures: 1000, waitingForSlot: true) == .seconds(60))
    }

    @Test("a local program holding every slot for an hour costs about 66 registrations, not one every 4 s")
    func heldSlotsAreNotHammered() async {
        let h = await Harness()
        h.mock.scriptStart(.always(.failure(Self.full)))
        _ = try? await h.module.on("heart")

        for _ in 0..<3600 {
            h.clock.advance(by: .seconds(1))
            await h.module.retryDue()
        }

        #expect(h.mock.startAdvertisingCallCount <= 70)
    }

    @Test("a refusal that lasts says so at first and then once a minute, not at every try")
    func lastingRefusalIsLoggedOnceAMinute() async {
        let logs = LogLines()
        let h = await Harness(logs: logs)
        h.mock.scriptStart(.always(.failure(Self.refused)))
        _ = try? await h.module.on("heart")

        for _ in 0..<75 {  // 1 + 2 + 73 × 4 s: about five minutes of tries
            h.clock.advance(by: .seconds(4))
            await h.module.retryDue()
        }

        let warnings = logs.all.filter { $0.hasPrefix("warning: heart: Failed to register advertisement") }
        #expect(h.mock.startAdvertisingCallCount == 76)
        #expect(warnings.count == 8)
    }

    @Test("a permanent failure is not retried")
    func permanentFailure() async {
        let h = await Harness()
        h.mock.scriptStart(.sequence([.failure(PeripheralError(.rejected, "Failed to parse advertisement."))]))
        _ = try? await h.module.on("heart")

        h.clock.advance(by: .seconds(3600))
        await h.module.retryDue()

        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(await h.status()?.phase == .failed(PeripheralError(.rejected, "Failed to parse advertisement.")))
        #expect(await h.module.nextRetry == nil)
    }

    @Test("turning off cancels a scheduled retry")
    func offCancelsRetry() async throws {
        let h = await Harness()
        h.mock.scriptStart(.sequence([.failure(Self.full)]))
        _ = try? await h.module.on("heart")

        try await h.module.off("heart")
        h.clock.advance(by: .seconds(10))
        await h.module.retryDue()

        #expect(await h.module.nextRetry == nil)
        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(await h.status()?.phase == .off)
    }

    @Test("with no adapter the module waits for one instead of retrying on a timer")
    func noAdapterWaits() async {
        let h = await Harness(adapters: [])

        let error = await #expect(throws: PeripheralError.self) { try await h.module.on("heart") }

        #expect(error?.code == .noAdapter)
        #expect(await h.status()?.phase == .waiting)
        #expect(await h.module.nextRetry == nil)
    }

    @Test("an advertisement waiting for a free slot goes on air as soon as another is turned off, before its retry")
    func slotFreedByOff() async throws {
        let h = await Harness()
        let doorID = RegistrationID("/ad/door")
        await h.module.configure(["heart": Harness.heart, "door": Harness.door])
        h.mock.scriptStart(.sequence([
            .success(Harness.heartID), .failure(PeripheralError(.noFreeInstance, "no free slot")), .success(doorID),
        ]))
        try await h.module.on("heart")
        _ = try? await h.module.on("door")

        try await h.module.off("heart")

        #expect(await h.status("door")?.phase == .on(doorID, adapter: "hci0"))
        #expect(h.mock.startAdvertisingCallCount == 3)
    }
}
