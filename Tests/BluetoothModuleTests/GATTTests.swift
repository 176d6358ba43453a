import BluetoothModule
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// A battery service and a writable custom one, as the module keeps them registered.
private enum App {
    static let level = GATTCharacteristicID(service: "power", characteristic: "level")
    static let id = RegistrationID("/org/bleadvd/gatt/app1")

    static func battery(_ percent: UInt8) -> GATTApplication {
        GATTApplication(services: [
            GATTService(name: "power", uuid: BluetoothUUID(0x180F), characteristics: [
                GATTCharacteristic(
                    name: "level", uuid: BluetoothUUID(0x2A19), flags: [.read, .notify],
                    format: GATTFormat(.uint8, range: 0...100), value: [percent]),
            ]),
        ])
    }

    static func harness() async -> Harness {
        let h = await Harness()
        h.mock.scriptRegisterApplication(.always(.success(id)))
        h.mock.scriptUnregisterApplication(.always(.success(())))
        h.mock.scriptUpdateValue(.always(.success(())))
        return h
    }
}

@Suite("Keeping the GATT application registered")
struct GATTTests {
    @Test("serving an application registers it on the adapter")
    func serveRegisters() async {
        let h = await App.harness()

        await h.module.serve(App.battery(80))

        #expect(h.mock.calls.registeredApplications.map(\.adapter) == ["hci0"])
        #expect(h.mock.calls.registeredApplications.first?.application == App.battery(80))
        #expect(await h.module.status()[.application]?.phase == .on(App.id, adapter: "hci0"))
    }

    @Test("a new value of the same shape changes in place: one update, no new registration")
    func sameShapeUpdatesInPlace() async {
        let h = await App.harness()
        await h.module.serve(App.battery(80))

        await h.module.serve(App.battery(60))

        #expect(h.mock.calls.registeredApplications.count == 1)
        #expect(h.mock.calls.updatedValues.map(\.value) == [[60]])
        #expect(h.mock.calls.updatedValues.first?.characteristic == App.level)
    }

    @Test("a changed shape is unregistered and registered anew")
    func changedShapeReregisters() async {
        let h = await App.harness()
        await h.module.serve(App.battery(80))
        var changed = App.battery(80)
        changed.services[0].characteristics[0].flags = [.read]

        await h.module.serve(changed)

        #expect(h.mock.calls.unregisteredApplications == [App.id])
        #expect(h.mock.calls.registeredApplications.count == 2)
    }

    @Test("no application any more unregisters it")
    func nilUnregisters() async {
        let h = await App.harness()
        await h.module.serve(App.battery(80))

        await h.module.serve(nil)

        #expect(h.mock.calls.unregisteredApplications == [App.id])
        #expect(await h.module.status()[.application] == nil)
    }

    @Test("setting a value updates the registered characteristic")
    func setValueUpdates() async throws {
        let h = await App.harness()
        await h.module.serve(App.battery(80))

        try await h.module.setValue([42], of: App.level)

        #expect(h.mock.calls.updatedValues.map(\.value) == [[42]])
        #expect(await h.module.application?[App.level]?.value == [42])
    }

    @Test("setting an unknown characteristic is refused and calls nothing")
    func setUnknownRefused() async {
        let h = await App.harness()
        await h.module.serve(App.battery(80))

        await #expect(throws: PeripheralError.self) {
            try await h.module.setValue([1], of: GATTCharacteristicID(service: "power", characteristic: "nope"))
        }
        #expect(h.mock.calls.updatedValues.isEmpty)
    }

    @Test("after BlueZ restarts the application is registered again, with the values set since")
    func bluezRestartReregistersWithLatestValues() async throws {
        let h = await App.harness()
        await h.module.serve(App.battery(80))
        try await h.module.setValue([33], of: App.level)

        await h.module.handle(.bluezVanished())
        #expect(await h.module.status()[.application]?.phase == .waiting)
        await h.module.handle(.bluezAppeared())

        #expect(h.mock.calls.registeredApplications.count == 2)
        #expect(h.mock.calls.registeredApplications.last?.application[App.level]?.value == [33])
    }

    @Test("a central's write is the value registered after the adapter comes back")
    func writtenValueSurvivesAdapterLoss() async {
        let h = await App.harness()
        await h.module.serve(App.battery(80))
        await h.module.handle(.gatt(GATTEvent(App.level, .written([5], .number(5)), central: "AA:BB:CC:DD:EE:FF")))

        await h.module.handle(.adapterRemoved("hci0"))
        await h.module.handle(.adapterAdded("hci0"))

        #expect(h.mock.calls.registeredApplications.last?.application[App.level]?.value == [5])
    }

    @Test("a central's write is taken at once while other work has the turn with BlueZ, and is the value registered again")
    func aWriteDoesNotWaitForTheTurn() async throws {
        let h = await App.harness()
        await h.module.serve(App.battery(80))
        h.mock.scriptStart(.hangs)
        let holder = Task { try await h.module.on("heart") }
        defer { holder.cancel() }
        try await eventually("an advertisement is started", every: .milliseconds(1)) { h.mock.startAdvertisingCallCount > 0 }
        let taken = Recorder<Bool>()

        Task {
            await h.module.handle(.gatt(GATTEvent(App.level, .written([5], .number(5)), central: "AA:BB:CC:DD:EE:FF")))
            await taken.record(true)
        }

        try await eventually("the write is taken while on(_:) has the turn") { await taken.values == [true] }
        holder.cancel()
        _ = await holder.result
        h.mock.scriptStart(.always(.success(Harness.heartID)))
        await h.module.handle(.adapterRemoved("hci0"))
        await h.module.handle(.adapterAdded("hci0"))
        #expect(h.mock.calls.registeredApplications.last?.application[App.level]?.value == [5])
    }

    @Test("an adapter other than the application's going away leaves it registered")
    func otherAdapterRemovedLeavesIt() async {
        let h = await App.harness()
        await h.module.serve(App.battery(80))

        await h.module.handle(.adapterRemoved("hci1"))

        #expect(await h.module.status()[.application]?.phase == .on(App.id, adapter: "hci0"))
    }

    @Test("a transient failure is retried on the clock")
    func transientFailureRetried() async {
        let h = await App.harness()
        h.mock.scriptRegisterApplication(.sequence([.failure(PeripheralError(.failed, "busy")), .success(App.id)]))
        await h.module.serve(App.battery(80))
        guard case .retrying(let at, 1)? = await h.module.status()[.application]?.phase else {
            Issue.record("not retrying: \(String(describing: await h.module.status()[.application]?.phase))")
            return
        }

        h.clock.advance(by: h.clock.now.duration(to: at))
        await h.module.retryDue()

        #expect(h.mock.calls.registeredApplications.count == 2)
        #expect(await h.module.status()[.application]?.phase == .on(App.id, adapter: "hci0"))
    }

    @Test("a refusal that would repeat is not retried")
    func permanentFailureNotRetried() async {
        let h = await App.harness()
        h.mock.scriptRegisterApplication(.always(.failure(PeripheralError(.rejected, "bad"))))

        await h.module.serve(App.battery(80))

        #expect(await h.module.status()[.application]?.phase == .failed(PeripheralError(.rejected, "bad")))
        #expect(await h.module.nextRetry == nil)
    }
}
