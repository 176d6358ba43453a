import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

private enum Agent {
    static let id = RegistrationID("/org/bleadvd/agent")

    static func harness() async -> Harness {
        let h = await Harness()
        h.mock.scriptRegisterAgent(.always(.success(id)))
        h.mock.scriptUnregisterAgent(.always(.success(())))
        h.mock.scriptSetPairable(.always(.success(())))
        return h
    }
}

@Suite("Keeping the pairing agent registered")
struct PairingTests {
    @Test("offering a method registers the agent for it, with its decider")
    func offerRegisters() async {
        let h = await Agent.harness()
        let decider = RecordingDecider(true)

        await h.module.offerPairing(.passkey, decider: decider)

        #expect(h.mock.calls.registeredAgents.map(\.method) == [.passkey])
        #expect(await h.mock.agentRequest(PairingRequest(central: "AA:BB:CC:DD:EE:FF", .authorize)) == true)
        #expect(decider.asked == [PairingRequest(central: "AA:BB:CC:DD:EE:FF", .authorize)])
        #expect(await h.module.status()[.agent]?.phase == .on(Agent.id, adapter: "hci0"))
    }

    @Test("the adapter is closed to new bonds right after the agent registers, which opens it")
    func registeringClosesTheAdapter() async {
        let h = await Agent.harness()

        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))

        #expect(h.mock.calls.pairable.map(\.pairable) == [false])
        #expect(h.mock.calls.pairable.map(\.adapter) == ["hci0"])
    }

    @Test("an open window is sent again when the agent registers again after bluetoothd restarts")
    func windowSurvivesRestart() async throws {
        let h = await Agent.harness()
        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))
        try await h.module.setPairable(true)

        await h.module.handle(.bluezVanished())
        await h.module.handle(.bluezAppeared())

        #expect(h.mock.calls.registeredAgents.count == 2)
        #expect(h.mock.calls.pairable.map(\.pairable) == [false, true, true])
        #expect(await h.module.status()[.agent]?.phase == .on(Agent.id, adapter: "hci0"))
    }

    @Test("Pairable turned on by another program while no window is open (any local user may, by BlueZ's policy) is turned off again")
    func foreignPairableTurnedOff() async {
        let h = await Agent.harness()
        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))

        await h.module.handle(.pairable(adapter: "hci0", true))

        #expect(h.mock.calls.pairable.map(\.pairable) == [false, false])
    }

    @Test("Pairable on while bleadvd's own window is open is left alone")
    func ownPairableKept() async throws {
        let h = await Agent.harness()
        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))
        try await h.module.setPairable(true)

        await h.module.handle(.pairable(adapter: "hci0", true))

        #expect(h.mock.calls.pairable.map(\.pairable) == [false, true])
    }

    @Test("without an agent of bleadvd's (no [pairing]), Pairable is the administrator's: left alone")
    func noAgentNoWatch() async {
        let h = await Agent.harness()

        await h.module.handle(.pairable(adapter: "hci0", true))

        #expect(h.mock.calls.pairable.isEmpty)
    }

    @Test("the same method offered again changes nothing")
    func sameMethodIsKept() async {
        let h = await Agent.harness()
        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))

        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))

        #expect(h.mock.calls.registeredAgents.count == 1)
        #expect(h.mock.calls.unregisteredAgents.isEmpty)
    }

    @Test("another method unregisters the agent and registers it anew")
    func newMethodReregisters() async {
        let h = await Agent.harness()
        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))

        await h.module.offerPairing(.passkey, decider: RecordingDecider(true))

        #expect(h.mock.calls.unregisteredAgents == [Agent.id])
        #expect(h.mock.calls.registeredAgents.map(\.method) == [.justWorks, .passkey])
    }

    @Test("no method unregisters the agent: no new bonds")
    func offMeansNoAgent() async {
        let h = await Agent.harness()
        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))

        await h.module.offerPairing(nil, decider: RecordingDecider(true))

        #expect(h.mock.calls.unregisteredAgents == [Agent.id])
        #expect(await h.module.status()[.agent] == nil)
    }

    @Test("an agent bluetoothd released is registered again")
    func releasedAgentComesBack() async {
        let h = await Agent.harness()
        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))

        await h.module.handle(.released(Agent.id))

        #expect(h.mock.calls.registeredAgents.count == 2)
        #expect(await h.module.status()[.agent]?.phase == .on(Agent.id, adapter: "hci0"))
    }

    @Test("a window opened before the agent registers is sent with its registration")
    func windowBeforeAgent() async throws {
        let h = await Agent.harness()
        try await h.module.setPairable(true)

        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))

        #expect(h.mock.calls.pairable.map(\.pairable) == [true])
    }

    @Test("a refused registration is retried on the clock, as any registration")
    func refusedRegistrationRetries() async {
        let h = await Harness()
        h.mock.scriptRegisterAgent(.sequence([.failure(PeripheralError(.failed, "busy")), .success(Agent.id)]))
        h.mock.scriptSetPairable(.always(.success(())))
        await h.module.offerPairing(.justWorks, decider: RecordingDecider(true))

        h.clock.advance(by: .seconds(1))
        await h.module.retryDue()

        #expect(h.mock.calls.registeredAgents.count == 2)
        #expect(await h.module.status()[.agent]?.phase == .on(Agent.id, adapter: "hci0"))
    }

    @Test("bonds and forget go to the adapter in use")
    func bondsAndForget() async throws {
        let h = await Agent.harness()
        h.mock.scriptBonds(.always(.success([Bond(central: "11:22:33:44:55:66"), Bond(central: "00:11:22:33:44:55", name: "Phone")])))
        h.mock.scriptRemoveBond(.always(.success(())))

        let bonds = try await h.module.bonds()
        try await h.module.forget("11:22:33:44:55:66")

        #expect(bonds.map(\.central) == ["00:11:22:33:44:55", "11:22:33:44:55:66"])
        #expect(h.mock.calls.bondQueries == ["hci0"])
        #expect(h.mock.calls.removedBonds.map(\.central) == ["11:22:33:44:55:66"])
    }
}
