import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// BlueZ 5.66 to 5.73 forget an advertisement whose in-place update the kernel refused, and say
/// nothing: the module asks, a second after a burst of updates, and registers it again.
@Suite("Confirming in-place updates with BlueZ")
struct UpdateCheckTests {
    static func renamed(_ name: String) -> Advertisement {
        var advertisement = Harness.heart
        advertisement.localName = name
        return advertisement
    }

    /// A harness with heart on air and updates that succeed.
    static func onAir() async throws -> Harness {
        let h = await Harness()
        h.mock.scriptUpdate(.always(.success(())))
        try await h.module.on("heart")
        return h
    }

    @Test("an advertisement BlueZ dropped after an update is registered again a second later")
    func droppedAfterAnUpdateIsRegisteredAgain() async throws {
        let h = try await Self.onAir()
        h.mock.scriptReregister(.always(.success(true)))
        try await h.module.update("heart", to: Self.renamed("Thermo-2"))

        h.clock.advance(by: .seconds(1))
        await h.module.retryDue()

        #expect(h.mock.calls.reregistered == [Harness.heartID])
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("a burst of updates is confirmed once, a second after the last")
    func aBurstIsConfirmedOnce() async throws {
        let h = try await Self.onAir()
        h.mock.scriptReregister(.always(.success(false)))
        try await h.module.update("heart", to: Self.renamed("Thermo-2"))
        h.clock.advance(by: .milliseconds(600))
        try await h.module.update("heart", to: Self.renamed("Thermo-3"))

        h.clock.advance(by: .milliseconds(600))
        await h.module.retryDue()
        let early = h.mock.reregisterCallCount
        h.clock.advance(by: .milliseconds(400))
        await h.module.retryDue()

        #expect(early == 0)
        #expect(h.mock.reregisterCallCount == 1)
    }

    @Test("nothing is scheduled while nothing is updated")
    func nothingIsScheduledWhileIdle() async throws {
        let h = try await Self.onAir()

        let next = await h.module.nextRetry

        #expect(next == nil)
    }

    @Test("an advertisement taken off air before its check is not asked about")
    func takenOffBeforeItsCheck() async throws {
        let h = try await Self.onAir()
        try await h.module.update("heart", to: Self.renamed("Thermo-2"))
        try await h.module.off("heart")

        h.clock.advance(by: .seconds(1))
        await h.module.retryDue()

        #expect(h.mock.reregisterCallCount == 0)
        #expect(await h.module.nextRetry == nil)
    }

    @Test("when asking fails, the advertisement is registered anew")
    func whenAskingFailsItIsRegisteredAnew() async throws {
        let h = try await Self.onAir()
        h.mock.scriptReregister(.always(.failure(PeripheralError(.failed, "Failed to register advertisement"))))
        try await h.module.update("heart", to: Self.renamed("Thermo-2"))

        h.clock.advance(by: .seconds(1))
        await h.module.retryDue()

        #expect(h.mock.calls.stopped == [Harness.heartID])
        #expect(h.mock.calls.started.map(\.advertisement.localName) == ["Thermo-1", "Thermo-2"])
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }
}
