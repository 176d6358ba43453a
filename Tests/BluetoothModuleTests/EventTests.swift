import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

@Suite("Reconciling after BlueZ and adapter events")
struct EventTests {
    @Test("when BlueZ vanishes nothing is on air, and nothing is called")
    func bluezVanished() async throws {
        let h = await Harness()
        try await h.module.on("heart")

        await h.module.handle(.bluezVanished())

        #expect(await h.status()?.phase == .waiting)
        #expect(await h.status()?.desired == true)
        #expect(h.mock.stopAdvertisingCallCount == 0)
    }

    @Test("when BlueZ comes back, what should be on is registered again")
    func bluezBack() async throws {
        let h = await Harness()
        try await h.module.on("heart")
        await h.module.handle(.bluezVanished())

        await h.module.handle(.bluezAppeared())

        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("when BlueZ comes back, what is off stays off")
    func bluezBackLeavesOffAlone() async {
        let h = await Harness()
        await h.module.handle(.bluezVanished())

        await h.module.handle(.bluezAppeared())

        #expect(h.mock.startAdvertisingCallCount == 0)
    }

    @Test("BlueZ back before its adapter is ready: wait, then register when the adapter appears")
    func adapterAfterBluez() async throws {
        let h = await Harness()
        try await h.module.on("heart")
        await h.module.handle(.bluezVanished())
        h.mock.scriptAdapters(.always(.success([])))
        await h.module.handle(.bluezAppeared())
        h.mock.scriptAdapters(.always(.success([Harness.hci0])))

        await h.module.handle(.adapterAdded("hci0"))

        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
        #expect(await h.module.nextRetry == nil)
    }

    @Test("an adapter removed takes its advertisements off air; added back, they return")
    func adapterRemovedAndAdded() async throws {
        let h = await Harness()
        try await h.module.on("heart")

        h.mock.scriptAdapters(.always(.success([])))
        await h.module.handle(.adapterRemoved("hci0"))
        let whileGone = await h.status()?.phase
        h.mock.scriptAdapters(.always(.success([Harness.hci0])))
        await h.module.handle(.adapterAdded("hci0"))

        #expect(whileGone == .waiting)
        #expect(h.mock.startAdvertisingCallCount == 2)
    }

    @Test("another adapter appearing does not matter when one is configured")
    func otherAdapterIgnored() async throws {
        let h = await Harness(adapter: "hci1", adapters: [])
        _ = try? await h.module.on("heart")

        await h.module.handle(.adapterAdded("hci0"))

        #expect(h.mock.startAdvertisingCallCount == 0)
        #expect(h.mock.adaptersCallCount == 1)
    }

    @Test("powered off behind its back: off air, and nothing is tried while the adapter settles")
    func powerOffSettles() async throws {
        let h = await Harness()
        h.mock.scriptPowerOn(.always(.success(())))
        try await h.module.on("heart")
        h.mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0", powered: false)])))

        await h.module.handle(.adapterPowered("hci0", false))

        #expect(h.mock.stopAdvertisingCallCount == 1)
        #expect(h.mock.calls.poweredOn.isEmpty)
        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(await h.status()?.phase == .waiting)
        #expect(await h.status()?.lastError?.message == "adapter hci0 was just powered off (as bluetoothd does when it stops); waiting for it to settle")
        #expect(await h.module.nextRetry == h.clock.now.advanced(by: BluetoothModule<ManualClock>.powerOffSettle))
    }

    @Test("bluetoothd powering the adapter on as it starts (Busy): the registration waits for its Powered event, not a retry")
    func powerOnBusyWaitsForPoweredEvent() async throws {
        let h = try await Self.restartedWithHci0Busy(powerOn: .always(.failure(Self.powerBusy)))
        let whileBusy = await h.status()
        let retryWhileBusy = await h.module.nextRetry

        h.mock.scriptAdapters(.always(.success([Harness.hci0])))
        await h.module.handle(.adapterPowered("hci0", true))

        #expect(whileBusy?.phase == .waiting)
        #expect(whileBusy?.lastError?.message == "adapter hci0 is being powered on or off by BlueZ already (as bluetoothd does when it starts); waiting for it")
        #expect(retryWhileBusy == h.clock.now.advanced(by: RetryPolicy.standard.initial))
        #expect(h.mock.calls.poweredOn == ["hci0"])
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("BlueZ busy powering the adapter and no Powered event: powered on and registered once it settled")
    func powerOnBusyTriedAgainOnceSettled() async throws {
        let h = try await Self.restartedWithHci0Busy(powerOn: .sequence([.failure(Self.powerBusy), .success(())]))

        h.clock.advance(by: RetryPolicy.standard.initial)
        await h.module.retryDue()

        #expect(h.mock.calls.poweredOn == ["hci0", "hci0"])
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("an adapter BlueZ keeps busy is asked again after the retry's backoff: 1 s, then 2 s")
    func powerOnBusyBacksOff() async throws {
        let h = try await Self.restartedWithHci0Busy(powerOn: .always(.failure(Self.powerBusy)))

        h.clock.advance(by: .seconds(1))
        await h.module.retryDue()

        #expect(h.mock.calls.poweredOn == ["hci0", "hci0"])
        #expect(await h.module.nextRetry == h.clock.now.advanced(by: .seconds(2)))
        #expect(await h.status()?.phase == .waiting)
    }

    static let powerBusy = PeripheralError(.notPowered, "the adapter is being powered on or off already; waiting for it")

    /// "heart" on, then bluetoothd restarted with hci0 unpowered, its power-on answered as
    /// `powerOn` scripts (BlueZ's Busy while it powers hci0 on itself).
    static func restartedWithHci0Busy(powerOn: MockPeripheralManager.Script<Void>) async throws -> Harness {
        let h = await Harness()
        try await h.module.on("heart")
        await h.module.handle(.bluezVanished())
        h.mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0", powered: false)])))
        h.mock.scriptPowerOn(powerOn)
        await h.module.handle(.bluezAppeared())
        return h
    }

    @Test("powered off behind its back with power_on: once settled, powered on again and registered again")
    func powerCycleWithPowerOn() async throws {
        let h = await Harness()
        h.mock.scriptPowerOn(.always(.success(())))
        try await h.module.on("heart")
        h.mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0", powered: false)])))
        await h.module.handle(.adapterPowered("hci0", false))

        h.clock.advance(by: BluetoothModule<ManualClock>.powerOffSettle)
        await h.module.retryDue()

        #expect(h.mock.calls.poweredOn == ["hci0"])
        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("powered off, then bluetoothd vanishes while the adapter settles: nothing is powered on or registered")
    func powerOffThenVanishTriesNothing() async throws {
        let h = await Harness()
        h.mock.scriptPowerOn(.always(.success(())))
        try await h.module.on("heart")
        await h.module.handle(.adapterPowered("hci0", false))

        await h.module.handle(.bluezVanished())
        h.clock.advance(by: BluetoothModule<ManualClock>.powerOffSettle)
        await h.module.retryDue()

        #expect(h.mock.calls.poweredOn.isEmpty)
        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(h.mock.adaptersCallCount == 1)
        #expect(await h.status()?.phase == .waiting)
    }

    @Test("powered off with power_on = false: off air with the reason once settled; powered on: registered again")
    func powerCycleWithoutPowerOn() async throws {
        let h = await Harness(powerOn: false)
        try await h.module.on("heart")
        h.mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0", powered: false)])))

        await h.module.handle(.adapterPowered("hci0", false))
        h.clock.advance(by: BluetoothModule<ManualClock>.powerOffSettle)
        await h.module.retryDue()
        let whileOff = await h.status()
        h.mock.scriptAdapters(.always(.success([Harness.hci0])))
        await h.module.handle(.adapterPowered("hci0", true))

        let retrying = if case .retrying? = whileOff?.phase { true } else { false }
        #expect(retrying)
        #expect(whileOff?.lastError?.message == "adapter hci0 is powered off and power_on is false")
        #expect(h.mock.calls.poweredOn.isEmpty)
        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("released by BlueZ: registered again at once")
    func releasedIsReRegistered() async throws {
        let h = await Harness()
        try await h.module.on("heart")

        await h.module.handle(.released(Harness.heartID))

        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("released because its own timeout ran out: it is off, and stays off")
    func releasedAfterTimeout() async throws {
        let h = await Harness()
        var timed = Harness.heart
        timed.timeout = 30
        await h.module.configure(["heart": timed])
        try await h.module.on("heart")

        await h.module.handle(.released(Harness.heartID))

        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(await h.status()?.desired == false)
        #expect(await h.status()?.phase == .off)
    }

    @Test("a release for an identity the module does not know changes nothing")
    func unknownRelease() async throws {
        let h = await Harness()
        try await h.module.on("heart")

        await h.module.handle(.released(RegistrationID("/someone/else")))

        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("with no adapter named, advertisements on a later adapter move to an earlier one when it comes")
    func moveToEarlierAdapter() async throws {
        let hci1 = AdapterCapabilities(name: "hci1")
        let h = await Harness(adapters: [hci1])
        try await h.module.on("heart")
        h.mock.scriptAdapters(.always(.success([Harness.hci0, hci1])))

        await h.module.handle(.adapterAdded("hci0"))

        #expect(h.mock.calls.stopped == [Harness.heartID])
        #expect(h.mock.calls.started.map(\.adapter) == ["hci1", "hci0"])
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci0"))
    }

    @Test("with no adapter named, advertisements on an adapter that is removed wait for it, though another remains")
    func removedAdapterIsWaitedFor() async throws {
        let hci1 = AdapterCapabilities(name: "hci1")
        let h = await Harness(adapters: [Harness.hci0, hci1])
        try await h.module.on("heart")
        h.mock.scriptAdapters(.always(.success([hci1])))

        await h.module.handle(.adapterRemoved("hci0"))

        #expect(h.mock.calls.started.map(\.adapter) == ["hci0"])
        #expect(await h.status()?.phase == .waiting)
    }

    @Test("with no adapter named, a later adapter that comes moves nothing")
    func laterAdapterMovesNothing() async throws {
        let h = await Harness()
        try await h.module.on("heart")
        h.mock.scriptAdapters(.always(.success([Harness.hci0, AdapterCapabilities(name: "hci1")])))

        await h.module.handle(.adapterAdded("hci1"))

        #expect(h.mock.stopAdvertisingCallCount == 0)
        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("with an adapter named, another adapter that comes moves nothing")
    func namedAdapterStays() async throws {
        let hci1 = AdapterCapabilities(name: "hci1")
        let h = await Harness(adapter: "hci1", adapters: [Harness.hci0, hci1])
        try await h.module.on("heart")

        await h.module.handle(.adapterAdded("hci0"))

        #expect(h.mock.stopAdvertisingCallCount == 0)
        #expect(await h.status()?.phase == .on(Harness.heartID, adapter: "hci1"))
    }
}
