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
    static let doorID = RegistrationID("/ad/door")
    static let full = PeripheralError(.noFreeInstance, "Maximum advertisements reached")

    /// heart on air in its slot; door wanted and waiting for its turn (held).
    static func heartOnDoorHeld() async throws -> Harness {
        let h = await Harness()
        await h.module.configure(["heart": Harness.heart, "door": Harness.door])
        h.mock.scriptUpdate(.always(.success(())))
        h.mock.scriptReregister(.always(.success(false)))
        try await h.module.on("heart")
        await h.module.hold(["door"])
        try await h.module.on("door")
        return h
    }

    @Test("a turn changes what the slot carries: the one coming on air takes the registration of the one going off, in place")
    func turnUpdatesInPlace() async throws {
        let h = try await Self.heartOnDoorHeld()

        await h.module.hold(["heart"])

        #expect(h.mock.calls.updated.map(\.0) == [Harness.heartID])
        #expect(h.mock.calls.updated.map(\.1) == [Harness.door])
        #expect(await h.status("door")?.phase == .on(Harness.heartID, adapter: "hci0"))
        #expect(await h.status("heart")?.phase == .waiting)
    }

    @Test("a turn never frees a slot: nothing is unregistered and nothing registered, so no other program can take the slot between them")
    func turnFreesNoSlot() async throws {
        let h = try await Self.heartOnDoorHeld()

        await h.module.hold(["heart"])

        #expect(h.mock.stopAdvertisingCallCount == 0)
        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("the slot handed over is checked as any in-place update: BlueZ 5.66 to 5.73 drop an advertisement the kernel refused without a word")
    func handedOverSlotIsChecked() async throws {
        let h = try await Self.heartOnDoorHeld()
        await h.module.hold(["heart"])

        await h.after(BluetoothModule<ManualClock>.updateCheckDelay)

        #expect(h.mock.calls.reregistered == [Harness.heartID])
    }

    @Test("a change the stack cannot make in place: the one going off is unregistered, then the one coming on registered")
    func refusedHandOverFallsBack() async throws {
        let h = try await Self.heartOnDoorHeld()
        h.mock.scriptUpdate(.always(.failure(PeripheralError(.rejected, "BlueZ follows a change of ScanResponseManufacturerData only with --experimental; it needs a new registration"))))
        h.mock.scriptStart(.always(.success(Self.doorID)))

        await h.module.hold(["heart"])

        #expect(h.mock.stopAdvertisingCallCount == 1)
        #expect(await h.status("door")?.phase == .on(Self.doorID, adapter: "hci0"))
    }

    @Test("what was refused for want of a slot before the rotation began takes the slot of the first one held, in place, at once")
    func holdHandsASlotToTheWaiting() async throws {
        let h = await Harness()
        await h.module.configure(["heart": Harness.heart, "door": Harness.door])
        h.mock.scriptStart(.sequence([.success(Harness.heartID), .failure(Self.full)]))
        h.mock.scriptUpdate(.always(.success(())))
        try await h.module.on("heart")
        _ = try? await h.module.on("door")

        await h.module.hold(["heart"])

        #expect(await h.status("door")?.phase == .on(Harness.heartID, adapter: "hci0"))
        #expect(h.mock.stopAdvertisingCallCount == 0)
    }
}
