import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// The capture behind these (docs/RELIABILITY.md, "A registration in the wrong bluetoothd"):
/// events reach the module after calls it made meanwhile, which the next bluetoothd answered.
@Suite("Registrations and the runs of bluetoothd")
struct GenerationTests {
    static let second = StackGeneration(2, name: ":1.85")
    static let heartOnSecond = RegistrationID("/ad/heart-2", generation: second)

    @Test("a registration the next bluetoothd answered stays on air when the old one's vanishing arrives")
    func olderVanishKeepsNewerRegistration() async throws {
        let h = await Harness()
        h.mock.scriptStart(.always(.success(Self.heartOnSecond)))
        try await h.module.on("heart")

        await h.module.handle(.bluezVanished(.first))
        await h.module.handle(.bluezAppeared(Self.second))

        #expect(await h.status()?.phase == .on(Self.heartOnSecond, adapter: "hci0"))
        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(h.mock.stopAdvertisingCallCount == 0)
    }

    @Test("the old bluetoothd's adapter going away leaves what the next one registered on it")
    func olderAdapterRemovalKeepsNewerRegistration() async throws {
        let h = await Harness()
        h.mock.scriptStart(.always(.success(Self.heartOnSecond)))
        try await h.module.on("heart")

        await h.module.handle(.adapterRemoved("hci0", .first))
        await h.module.handle(.adapterPowered("hci0", false, .first))

        #expect(await h.status()?.phase == .on(Self.heartOnSecond, adapter: "hci0"))
        #expect(h.mock.stopAdvertisingCallCount == 0)
    }

    @Test("a bluetoothd's vanishing takes exactly what it held")
    func vanishTakesItsOwn() async throws {
        let h = await Harness()
        try await h.module.on("heart")

        await h.module.handle(.bluezVanished(.first))

        #expect(await h.status()?.phase == .waiting)
        #expect(h.mock.stopAdvertisingCallCount == 0)
    }

    @Test("while BlueZ is absent nothing is asked of it, and on says why")
    func absentTriesNothing() async throws {
        let h = await Harness()
        await h.module.handle(.bluezVanished(.first))

        let error = await #expect(throws: PeripheralError.self) { try await h.module.on("heart") }

        #expect(error?.code == .bluezUnavailable)
        #expect(h.mock.adaptersCallCount == 0)
        #expect(h.mock.startAdvertisingCallCount == 0)
        #expect(await h.status()?.phase == .waiting)
        #expect(await h.module.stackView().bluez == .absent)
    }

    @Test("the next bluetoothd's appearance registers what waits, once")
    func appearanceRegistersOnce() async throws {
        let h = await Harness()
        try await h.module.on("heart")
        await h.module.handle(.bluezVanished(.first))
        h.mock.scriptStart(.always(.success(Self.heartOnSecond)))

        await h.module.handle(.bluezAppeared(Self.second))

        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Self.heartOnSecond, adapter: "hci0"))
        #expect(await h.module.stackView().bluez == .present(Self.second))
    }

    @Test("an application the next bluetoothd answered stays registered when the old one's vanishing arrives")
    func olderVanishKeepsNewerApplication() async throws {
        let h = await Harness()
        let id = RegistrationID("/org/bleadvd/gatt/app2", generation: Self.second)
        h.mock.scriptRegisterApplication(.always(.success(id)))
        await h.module.serve(GATTApplication(services: [
            GATTService(name: "power", uuid: BluetoothUUID(0x180F), characteristics: [
                GATTCharacteristic(name: "level", uuid: BluetoothUUID(0x2A19), flags: [.read], format: GATTFormat(.uint8), value: [87]),
            ]),
        ]))

        await h.module.handle(.bluezVanished(.first))
        await h.module.handle(.bluezAppeared(Self.second))

        #expect(await h.module.status()[.application]?.phase == .on(id, adapter: "hci0"))
        #expect(h.mock.calls.registeredApplications.count == 1)
    }
}
