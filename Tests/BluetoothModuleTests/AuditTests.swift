import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// The self-check a second after things settle: what the stack holds against what is on air.
@Suite("Auditing what BlueZ holds")
struct AuditTests {
    static let delay = BluetoothModule<ManualClock>.standardAuditDelay
    static let strayID = RegistrationID("/ad/stray")

    /// A harness with heart on air, its audit due; BlueZ answers it with `held` (none: BlueZ
    /// reports no adapter, which the audit takes as agreement). The answer is scripted before
    /// the clock comes to the audit's time: the module's own timer wakes then and may run the
    /// audit before the test's ``BluetoothModule/auditDue()`` (which then waits for it, and
    /// finds nothing more due), and both must see the same answer (scripted after, 1 run in 60
    /// saw the timer's audit take the agreeing answer first).
    static func onAir(held: [RegistrationAudit] = [], script: (MockPeripheralManager) -> Void = { _ in }) async throws -> Harness {
        let h = await Harness()
        try await h.module.on("heart")
        h.mock.scriptAudit(.always(.success(held)))
        script(h.mock)
        h.clock.advance(by: delay)
        return h
    }

    @Test("an audit is due a second after a change, and none while nothing changes")
    func auditFollowsChanges() async throws {
        let h = await Harness()
        h.clock.advance(by: Self.delay)
        await h.module.auditDue()
        let idle = await h.module.nextAudit

        try await h.module.on("heart")

        #expect(idle == nil)
        #expect(await h.module.nextAudit == h.clock.now.advanced(by: Self.delay))
    }

    @Test("when all agrees, the audit changes nothing and leaves nothing scheduled")
    func agreementChangesNothing() async throws {
        let h = try await Self.onAir(held: [RegistrationAudit(adapter: "hci0", registered: 1, held: [Harness.heartID])])

        await h.module.auditDue()

        #expect(h.mock.calls.audits == 1)
        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(h.mock.stopAdvertisingCallCount == 0)
        #expect(await h.module.discrepancies().isEmpty)
        #expect(await h.module.nextAudit == nil)
    }

    @Test("an advertisement on air that the manager no longer holds is registered again")
    func missingIsRegisteredAgain() async throws {
        let h = try await Self.onAir(held: [RegistrationAudit(adapter: "hci0", registered: 0, held: [])])

        await h.module.auditDue()

        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("an advertisement turned off whose unregistering BlueZ never answered, and which BlueZ then dropped, is not registered again: it is off")
    func unansweredOffStaysOff() async throws {
        let h = try await Self.onAir()
        h.mock.scriptStop(.always(.failure(PeripheralError(.timeout, "BlueZ did not answer in time"))))
        await #expect(throws: PeripheralError.self) { try await h.module.off("heart") }
        h.mock.scriptAudit(.always(.success([RegistrationAudit(adapter: "hci0", registered: 0, held: [])])))
        h.clock.advance(by: Self.delay)

        await h.module.auditDue()

        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(await h.status()?.phase == .off)
    }

    @Test("a registration no advertisement tracks is unregistered")
    func strayIsUnregistered() async throws {
        let h = try await Self.onAir(held: [RegistrationAudit(adapter: "hci0", registered: 2, held: [Harness.heartID, Self.strayID])])

        await h.module.auditDue()

        #expect(h.mock.calls.stopped == [Self.strayID])
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("BlueZ counting fewer than are held: each is confirmed, and a dropped one registered again")
    func fewerCountedAreConfirmed() async throws {
        let h = try await Self.onAir(held: [RegistrationAudit(adapter: "hci0", registered: 0, held: [Harness.heartID])]) { $0.scriptReregister(.always(.success(true))) }

        await h.module.auditDue()

        #expect(h.mock.calls.reregistered == [Harness.heartID])
    }

    @Test("after a repair the module counts again a second later")
    func repairIsRecounted() async throws {
        let h = try await Self.onAir(held: [RegistrationAudit(adapter: "hci0", registered: 2, held: [Harness.heartID, Self.strayID])])

        await h.module.auditDue()

        #expect(await h.module.nextAudit == h.clock.now.advanced(by: Self.delay))
    }

    @Test("a difference that comes back after every repair is fought three times, then reported")
    func repairsAreBounded() async throws {
        let h = try await Self.onAir(held: [RegistrationAudit(adapter: "hci0", registered: 2, held: [Harness.heartID, Self.strayID])])

        for _ in 0..<5 {
            await h.module.auditDue()
            h.clock.advance(by: Self.delay)
        }

        #expect(h.mock.calls.audits == BluetoothModule<ManualClock>.maximumRepairingAudits)
        #expect(await h.module.nextAudit == nil)
    }

    @Test("more registered than bleadvd holds, none of them nameable: reported, not repaired")
    func unnameableIsReported() async throws {
        let h = try await Self.onAir(held: [RegistrationAudit(adapter: "hci0", registered: 3, held: [Harness.heartID])])

        await h.module.auditDue()

        #expect(await h.module.discrepancies() == [
            "hci0": "BlueZ holds 3 advertisement(s) on hci0, bleadvd 1: 2 registered by another program, or by bleadvd where it cannot name them",
        ])
        #expect(h.mock.stopAdvertisingCallCount == 0)
        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("a reported difference is cleared when BlueZ agrees again")
    func reportClears() async throws {
        let h = try await Self.onAir(held: [RegistrationAudit(adapter: "hci0", registered: 3, held: [Harness.heartID])])
        await h.module.auditDue()
        h.mock.scriptAudit(.always(.success([RegistrationAudit(adapter: "hci0", registered: 1, held: [Harness.heartID])])))
        try await h.module.off("heart")
        try await h.module.on("heart")
        h.clock.advance(by: Self.delay)

        await h.module.auditDue()

        #expect(await h.module.discrepancies().isEmpty)
    }

    @Test("no audit while BlueZ is absent")
    func noAuditWhileAbsent() async throws {
        let h = await Harness()
        try await h.module.on("heart")
        await h.module.handle(.bluezVanished())
        h.clock.advance(by: Self.delay)

        await h.module.auditDue()

        #expect(h.mock.calls.audits == 0)
    }
}
