import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

@Suite("Turning advertisements on and off")
struct OnOffTests {
    @Test("on registers the configured advertisement once, on the first adapter")
    func onRegisters() async throws {
        let h = await Harness()

        try await h.module.on("heart")

        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(h.mock.calls.started.first?.advertisement == Harness.heart)
        #expect(h.mock.calls.started.first?.adapter == "hci0")
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("on twice is one registration")
    func onIsIdempotent() async throws {
        let h = await Harness()

        try await h.module.on("heart")
        try await h.module.on("heart")

        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("off unregisters what on registered, once")
    func offUnregisters() async throws {
        let h = await Harness()
        try await h.module.on("heart")

        try await h.module.off("heart")

        #expect(h.mock.calls.stopped == [Harness.heartID])
        #expect(await h.status()?.desired == false)
        #expect(await h.status()?.phase == .off)
    }

    @Test("off when already off calls nothing")
    func offIsIdempotent() async throws {
        let h = await Harness()

        try await h.module.off("heart")

        #expect(h.mock.stopAdvertisingCallCount == 0)
    }

    @Test("an unknown name is refused without calling BlueZ")
    func unknownName() async {
        let h = await Harness()

        let error = await #expect(throws: PeripheralError.self) { try await h.module.on("nope") }

        #expect(error == PeripheralError(.unknownName, "no advertisement named \"nope\""))
        #expect(h.mock.startAdvertisingCallCount == 0)
    }

    @Test("an advertisement BlueZ says is gone already counts as off")
    func stopOfUnregistered() async throws {
        let h = await Harness()
        h.mock.scriptStop(.always(.failure(PeripheralError(.notRegistered, "DoesNotExist"))))
        try await h.module.on("heart")

        try await h.module.off("heart")

        #expect(await h.status()?.phase == .off)
    }

    @Test("a powered-off adapter is powered on before registering")
    func powersOn() async throws {
        let h = await Harness(adapters: [AdapterCapabilities(name: "hci0", powered: false)])
        h.mock.scriptPowerOn(.always(.success(())))

        try await h.module.on("heart")

        #expect(h.mock.calls.poweredOn == ["hci0"])
        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("with power_on false a powered-off adapter is left alone and reported")
    func doesNotPowerOn() async {
        let h = await Harness(powerOn: false, adapters: [AdapterCapabilities(name: "hci0", powered: false)])

        let error = await #expect(throws: PeripheralError.self) { try await h.module.on("heart") }

        #expect(error?.code == .notPowered)
        #expect(h.mock.powerOnCallCount == 0)
        #expect(h.mock.startAdvertisingCallCount == 0)
    }

    @Test("the configured adapter is used, not the first")
    func configuredAdapter() async throws {
        let h = await Harness(adapter: "hci1", adapters: [Harness.hci0, AdapterCapabilities(name: "hci1")])

        try await h.module.on("heart")

        #expect(h.mock.calls.started.map(\.adapter) == ["hci1"])
    }

    @Test("an adapter configured by its address is used, whatever the kernel named it (a dongle that came up as hci0 after a reboot)", arguments: [
        ([AdapterCapabilities(name: "hci0", address: "DC:A6:32:00:00:01"), AdapterCapabilities(name: "hci1", address: "00:1A:7D:DA:71:13")], "hci1"),
        ([AdapterCapabilities(name: "hci0", address: "00:1A:7D:DA:71:13"), AdapterCapabilities(name: "hci1", address: "DC:A6:32:00:00:01")], "hci0"),
    ])
    func adapterByAddress(adapters: [AdapterCapabilities], expected: String) async throws {
        let h = await Harness(adapter: "00:1a:7d:da:71:13", adapters: adapters)

        try await h.module.on("heart")

        #expect(h.mock.calls.started.map(\.adapter) == [expected])
    }

    @Test("the status of an advertisement on air names its adapter's address")
    func statusNamesTheAddress() async throws {
        let h = await Harness(adapters: [AdapterCapabilities(name: "hci1", address: "00:1A:7D:DA:71:13")])

        try await h.module.on("heart")

        #expect(await h.status()?.adapterAddress == "00:1A:7D:DA:71:13")
    }

    @Test("an address no adapter has registers nothing, and says which address it waits for")
    func adapterAddressAbsent() async throws {
        let h = await Harness(adapter: "00:1A:7D:DA:71:13", adapters: [AdapterCapabilities(name: "hci0", address: "DC:A6:32:00:00:01")])

        let error = await #expect(throws: PeripheralError.self) { try await h.module.on("heart") }

        #expect(h.mock.startAdvertisingCallCount == 0)
        #expect(error?.message.contains("adapter 00:1A:7D:DA:71:13 is not present") == true, "\(String(describing: error))")
    }

    @Test("changing an advertisement that is on air updates it in place")
    func configureUpdatesInPlace() async throws {
        let h = await Harness()
        h.mock.scriptUpdate(.always(.success(())))
        try await h.module.on("heart")
        var changed = Harness.heart
        changed.localName = "Thermo-2"

        await h.module.configure(["heart": changed])

        #expect(h.mock.calls.updated.map(\.advertisement) == [changed])
        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(h.mock.stopAdvertisingCallCount == 0)
    }

    @Test("an advertisement dropped from the configuration is taken off air and forgotten")
    func configureRemoves() async throws {
        let h = await Harness()
        try await h.module.on("heart")

        await h.module.configure(["door": Harness.door])

        #expect(h.mock.calls.stopped == [Harness.heartID])
        #expect(await h.module.status().keys.sorted() == [.advertisement("door")])
    }

    @Test("a call nobody scripted is reported as a test issue naming the call")
    func unscriptedCallIsLoud() async throws {
        let mock = MockPeripheralManager()

        await withKnownIssue {
            _ = try await mock.adapters()
        }

        #expect(mock.calls.unscripted == ["adapters()"])
    }
}
