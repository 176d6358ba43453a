import BluetoothModule
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

@Suite("The module's phases, its own retry timer, and its queue", .timeLimit(.minutes(3)))
struct PhaseTests {
    static let full = PeripheralError(.noFreeInstance, "Maximum advertisements reached")

    @Test("a retry is made by the module's own timer when the clock reaches it")
    func theModuleRetriesByItself() async {
        let h = await Harness()
        h.mock.scriptStart(.sequence([.failure(Self.full), .success(Harness.heartID)]))
        let changes = await h.module.changes()
        _ = try? await h.module.on("heart")
        await h.clock.waitForSleepers()

        h.clock.advance(by: .seconds(1))
        let onAir = await changes.first { $0[.advertisement("heart")]?.phase == .on(Harness.heartID, adapter: "hci0") }

        #expect(onAir != nil)
        #expect(h.mock.startAdvertisingCallCount == 2)
    }

    @Test("each failure in a row is counted in the phase, with the backoff it earns")
    func failuresAreCountedInThePhase() async {
        let h = await Harness()
        h.mock.scriptStart(.sequence([.failure(Self.full), .failure(Self.full)]))
        _ = try? await h.module.on("heart")
        h.clock.advance(by: .seconds(1))

        await h.module.retryDue()

        #expect(await h.status()?.phase == .retrying(at: ManualClock.Instant(offset: .seconds(3)), failures: 2))
    }

    @Test("an advertisement the adapter cannot carry fails for good without calling BlueZ")
    func adapterCapabilitiesAreChecked() async {
        let h = await Harness(adapters: [AdapterCapabilities(name: "hci0", secondaryChannels: [.oneM])])
        var coded = Harness.heart
        coded.localName = nil
        coded.secondaryChannel = .coded
        await h.module.configure(["heart": coded])

        let error = await #expect(throws: PeripheralError.self) { try await h.module.on("heart") }

        #expect(error?.code == .invalid)
        #expect(error?.message == "secondary_channel \"Coded\" is not supported by hci0 (supported: 1M)")
        #expect(h.mock.startAdvertisingCallCount == 0)
        #expect(await h.status()?.phase == .failed(error!))
    }

    @Test("a task waiting for its turn behind a BlueZ that never answers leaves the queue when cancelled")
    func waitingForTheModuleIsCancellable() async throws {
        let h = await Harness()
        h.mock.scriptStart(.neverAnswers)
        let holder = Task { try await h.module.on("heart") }
        try await eventually("an advertisement is started", every: .milliseconds(1)) { h.mock.startAdvertisingCallCount > 0 }
        let waiter = Task { try await h.module.off("heart") }

        waiter.cancel()
        let outcome = await waiter.result

        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(h.mock.stopAdvertisingCallCount == 0)
        holder.cancel()
    }

    @Test("an operation that keeps the turn with BlueZ for a second is named in the journal, with how many waited behind it")
    func aLongTurnIsLogged() async throws {
        let logs = LogLines()
        let h = await Harness(logs: logs)
        h.mock.scriptStart(.hangs)
        let holder = Task { try await h.module.on("heart") }
        try await eventually("an advertisement is started", every: .milliseconds(1)) { h.mock.startAdvertisingCallCount > 0 }
        let waiter = Task { await h.module.handle(.connected(central: "00:AA:01:01:00:01", adapter: "hci0")) }
        try await eventually("the event waits for its turn", every: .milliseconds(1)) { await h.module.turn?.waiting == 1 }

        h.clock.advance(by: .seconds(2))
        holder.cancel()
        _ = await holder.result
        await waiter.value

        #expect(logs.all.contains("notice: on(_:) held the turn with BlueZ for 2.0 seconds; 1 operation(s) waited behind it"))
        #expect(logs.all.contains("notice: handle(_:) waited 2.0 seconds for its turn with BlueZ (on(_:) had it when it asked)"))
    }

    @Test("operations that take less than a second with BlueZ are not logged for it")
    func aShortTurnIsNotLogged() async throws {
        let logs = LogLines()
        let h = await Harness(logs: logs)

        try await h.module.on("heart")
        h.clock.advance(by: .milliseconds(999))
        await h.module.handle(.connected(central: "00:AA:01:01:00:01", adapter: "hci0"))

        #expect(!logs.all.contains { $0.contains("turn with BlueZ") })
    }

    @Test("an update that finds the registration gone registers it again")
    func updateOfAReleasedRegistration() async {
        let h = await Harness()
        try? await h.module.on("heart")
        h.mock.scriptUpdate(.always(.failure(PeripheralError(.notRegistered, "/ad/heart was released by BlueZ while it was being updated"))))
        var renamed = Harness.heart
        renamed.localName = "Thermo-2"

        await h.module.configure(["heart": renamed])

        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(h.mock.calls.started.last?.advertisement.localName == "Thermo-2")
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }
}
