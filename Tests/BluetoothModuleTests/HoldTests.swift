import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// What the rotation asks of the module: advertisements kept off air while they should be on,
/// and the adapter's slots counted.
@Suite("Holding advertisements for their turn")
struct HoldTests {
    @Test("a held advertisement goes off air and stays wanted: its turn is the rotation's, not the user's")
    func holdTakesOffAir() async throws {
        let h = await Harness()
        try await h.module.on("heart")

        await h.module.hold(["heart"])

        #expect(h.mock.stopAdvertisingCallCount == 1)
        #expect(await h.status()?.desired == true)
        #expect(await h.status()?.phase == .waiting)
    }

    @Test("an advertisement released from its hold goes on air again")
    func releaseRegisters() async throws {
        let h = await Harness()
        try await h.module.on("heart")
        await h.module.hold(["heart"])

        await h.module.hold([])

        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("turning a held advertisement on registers nothing until its hold ends")
    func onWhileHeld() async throws {
        let h = await Harness()
        await h.module.hold(["heart"])

        try await h.module.on("heart")

        #expect(h.mock.startAdvertisingCallCount == 0)
        #expect(await h.status()?.phase == .waiting)
    }

    @Test("an advertisement turned off while held is not registered when its hold ends")
    func releaseOfOneTurnedOff() async throws {
        let h = await Harness()
        try await h.module.on("heart")
        await h.module.hold(["heart"])
        try await h.module.off("heart")

        await h.module.hold([])

        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(await h.status()?.phase == .off)
    }

    @Test("the slots are the adapter's as BlueZ counts them now, the module's own on air there, and whether the kernel shows them in turn (no secondary channels)")
    func slotsCounted() async throws {
        let h = await Harness(adapters: [AdapterCapabilities(name: "hci0", freeInstances: 3, activeInstances: 2)])
        try await h.module.on("heart")

        let slots = await h.module.slots()

        #expect(slots == AdapterSlots(adapter: "hci0", free: 3, active: 2, ours: 1, shownInTurn: true))
    }
}

extension HoldTests {
    @Test("a slot freed by a hold goes at once to what waits for one, not at its next retry")
    func holdFreesASlotForTheWaiting() async throws {
        let h = await Harness()
        await h.module.configure(["heart": Harness.heart, "door": Harness.door])
        h.mock.scriptStart(.sequence([.success(Harness.heartID), .failure(PeripheralError(.noFreeInstance, "Maximum advertisements reached")), .success(RegistrationID("/ad/door"))]))
        try await h.module.on("heart")
        _ = try? await h.module.on("door")

        await h.module.hold(["heart"])

        #expect(await h.status("door")?.phase == .on(RegistrationID("/ad/door"), adapter: "hci0"))
    }
}
