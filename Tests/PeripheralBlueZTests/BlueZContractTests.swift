import DBus
import Peripheral
import PeripheralBlueZ
import TestSupport
import Testing

/// The contract between `BlueZPeripheralManager` and BlueZ, against a stand-in that behaves like
/// bluetoothd 5.66 (StandIn/bluez_standin.py). The test bed runs the same steps against the real
/// bluetoothd (testbed/scenarios/20-peripheral-bluez.sh).
@Suite("BlueZPeripheralManager against a BlueZ stand-in")
struct BlueZContractTests {
    static let thermometer = Advertisement(
        serviceUUIDs: [BluetoothUUID(0x180D), try! BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")],
        manufacturerData: [.init(companyID: 0xFFFF, data: [1, 2, 3, 4])],
        serviceData: [.init(uuid: BluetoothUUID(0x9999), data: [0, 1])],
        localName: "Thermo-1")

    @Test("adapters are read from BlueZ's object manager with their capabilities")
    func adaptersAreReadFromBlueZObjectManagerWithTheirCapabilities() async throws {
        let session = try await StandInSession(adapters: ["hci0", "hci1"])

        let adapters = try await session.manager.adapters()

        #expect(adapters.map(\.name) == ["hci0", "hci1"])
        #expect(adapters[0] == AdapterCapabilities(
            name: "hci0", address: "00:AA:01:00:00:00", powered: true, freeInstances: 4, activeInstances: 0,
            includes: [.txPower, .appearance, .localName], secondaryChannels: [.oneM, .twoM],
            maxAdvertisingLength: 31, alias: "hci0", systemName: "hci0", release: .before571))
    }

    @Test("an alias set is the adapter's Alias; an empty one puts the system's name back")
    func aliasSetAndPutBack() async throws {
        let session = try await StandInSession()

        try await session.manager.setAlias("Kitchen lamp", adapter: "hci0")
        let set = try await session.manager.adapters().first?.alias
        try await session.manager.setAlias("", adapter: "hci0")
        let back = try await session.manager.adapters().first?.alias

        #expect(set == "Kitchen lamp")
        #expect(back == "hci0")
        #expect(try await session.calls().filter { $0.hasPrefix("Set Alias") } == ["Set Alias Kitchen lamp", "Set Alias "])
    }

    @Test("registering lets BlueZ read the advertisement back before it replies")
    func registeringLetsBlueZReadTheAdvertisementBackBeforeItReplies() async throws {
        let session = try await StandInSession()

        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")

        #expect(try await session.calls() == [
            "RegisterAdvertisement \(id)", "GetManagedObjects \(id)", "GetAll \(id)", "registered \(id)",
        ])
    }

    @Test("BlueZ parses exactly the properties that are set, with the signatures it expects")
    func bluezParsesExactlyThePropertiesThatAreSetWithTheSignaturesIt() async throws {
        let session = try await StandInSession()

        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")

        let held = try await session.advertisements()
        #expect(held[id.rawValue] == Self.thermometer.bluezProperties)
        #expect(held[id.rawValue].map { Set($0.keys) } == [
            "Type", "LocalName", "ServiceUUIDs", "ManufacturerData", "ServiceData",
        ])
    }

    @Test("stopping unregisters and removes the exported object")
    func stoppingUnregistersAndRemovesTheExportedObject() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")

        try await session.manager.unregister(id)

        #expect(try await session.advertisements().isEmpty)
        #expect(try await session.calls().last == "UnregisterAdvertisement \(id)")
        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("a registration refused on a kernel with a known bug says what it is and what fixes it",
          arguments: [("6.12.93+rpt-rpi-v8", true), ("6.18.34+rpt-rpi-2712", true), ("6.12.87+rpt-rpi-v8", false),
                     ("6.12.117+deb13-amd64", false), ("6.1.0-56-amd64", false)])
    func aRefusalOnAKnownBadKernelIsNamed(kernel: String, named: Bool) async throws {
        let session = try await StandInSession(kernelRelease: kernel)
        try await session.control("SetPowered", [.string("hci0"), .boolean(false)])

        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")
        }

        #expect(error?.code == .failed)
        #expect(error?.message.contains("bluez#2269") == named)
        #expect(error?.message.contains("update BlueZ to 5.87") == named)
    }

    @Test("a refused registration leaves no exported object behind")
    func aRefusedRegistrationLeavesNoExportedObjectBehind() async throws {
        let session = try await StandInSession()
        try await session.control("SetPowered", [.string("hci0"), .boolean(false)])

        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")
        }

        #expect(error?.code == .failed)
        #expect(error?.message.contains("Failed to register advertisement") == true)
        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("no free instance is reported as such")
    func noFreeInstanceIsReportedAsSuch() async throws {
        let session = try await StandInSession()
        try await session.control("SetFreeInstances", [.string("hci0"), .byte(0)])

        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")
        }

        #expect(error?.code == .noFreeInstance)
    }

    @Test("an adapter BlueZ does not have is reported as no adapter")
    func anAdapterBlueZDoesNotHaveIsReportedAsNoAdapter() async throws {
        let session = try await StandInSession()

        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.register(.advertisement(Self.thermometer), on: "hci7")
        }

        #expect(error?.code == .noAdapter)
        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("an update reaches BlueZ live through PropertiesChanged")
    func anUpdateReachesBlueZLiveThroughPropertiesChanged() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")
        var changed = Self.thermometer
        changed.localName = "Thermo-2"

        try await session.manager.updateAdvertisement(id, to: changed)

        #expect(try await session.advertisements()[id.rawValue]?["LocalName"] == .string("Thermo-2"))
        #expect(try await session.calls().last == "refreshed \(id) LocalName")
    }

    @Test("a change of raw scan response data reaches BlueZ in place: BlueZ follows ScanResponseData without --experimental")
    func rawScanResponseDataUpdatesInPlace() async throws {
        let session = try await StandInSession()
        var advertisement = Self.thermometer
        advertisement.scanResponse.data = [.init(type: 0x26, data: [1])]
        let id = try await session.manager.register(.advertisement(advertisement), on: "hci0")
        advertisement.scanResponse.data = [.init(type: 0x26, data: [2])]

        try await session.manager.updateAdvertisement(id, to: advertisement)

        #expect(try await session.calls().last == "refreshed \(id) ScanResponseData")
    }

    @Test("a change of the scan response's manufacturer data asks for a new registration: BlueZ follows it in place only with --experimental")
    func structuredScanResponseNeedsNewRegistration() async throws {
        let session = try await StandInSession()
        var advertisement = Self.thermometer
        advertisement.scanResponse.manufacturerData = [.init(companyID: 0xFFFF, data: [1])]
        let id = try await session.manager.register(.advertisement(advertisement), on: "hci0")
        let before = try await session.calls()
        advertisement.scanResponse.manufacturerData = [.init(companyID: 0xFFFF, data: [2])]

        let error = await #expect(throws: PeripheralError.self) { try await session.manager.updateAdvertisement(id, to: advertisement) }

        #expect(error?.code == .rejected)
        #expect(error?.message == "BlueZ follows a change of ScanResponseManufacturerData only with --experimental; it needs a new registration")
        #expect(try await session.calls() == before)
    }

    @Test("a refresh says PropertiesChanged of Type with its value unchanged, which BlueZ takes as a change and sends on")
    func aRefreshReachesBlueZAsAChangeOfType() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")

        try await session.manager.refreshAdvertisement(id)

        #expect(try await session.calls().last == "refreshed \(id) Type")
        #expect(try await session.advertisements()[id.rawValue] == Self.thermometer.bluezProperties)
    }

    @Test("an advertisement BlueZ forgot after a refused update is registered again, read back from the same object")
    func anAdvertisementBlueZForgotIsRegisteredAgain() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")
        var changed = Self.thermometer
        changed.localName = "Thermo-2"
        try await session.control("RefuseNextUpdate")
        try await session.manager.updateAdvertisement(id, to: changed)
        #expect(try await session.advertisements()[id.rawValue] == nil)

        let dropped = try await session.manager.reregisterIfDropped(id)

        #expect(dropped)
        #expect(try await session.advertisements()[id.rawValue] == changed.bluezProperties)
    }

    @Test("asking about an advertisement BlueZ still holds changes nothing")
    func askingAboutAHeldAdvertisementChangesNothing() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")

        let dropped = try await session.manager.reregisterIfDropped(id)

        #expect(!dropped)
        #expect(try await session.calls().suffix(2) == ["registered \(id)", "RegisterAdvertisement \(id)"])
        #expect(try await session.advertisements()[id.rawValue] == Self.thermometer.bluezProperties)
    }

    @Test("intervals reach BlueZ in the order that keeps the minimum under the maximum at every step",
          arguments: [(300, 400, 100, 150, ["MinInterval", "MaxInterval"]), (100, 150, 300, 400, ["MaxInterval", "MinInterval"])])
    func intervalsReachBlueZInAnOrderThatIsValidAtEveryStep(
        oldMin: UInt32, oldMax: UInt32, newMin: UInt32, newMax: UInt32, order: [String]
    ) async throws {
        let session = try await StandInSession()
        var advertisement = Self.thermometer
        (advertisement.minInterval, advertisement.maxInterval) = (oldMin, oldMax)
        let id = try await session.manager.register(.advertisement(advertisement), on: "hci0")
        (advertisement.minInterval, advertisement.maxInterval) = (newMin, newMax)

        try await session.manager.updateAdvertisement(id, to: advertisement)

        #expect(try await session.calls().suffix(2) == order.map { "refreshed \(id) \($0)" })
    }

    @Test("BlueZ may set TxPower on the advertisement")
    func bluezMaySetTxPowerOnTheAdvertisement() async throws {
        let session = try await StandInSession()
        var advertisement = Self.thermometer
        advertisement.txPower = 0
        let id = try await session.manager.register(.advertisement(advertisement), on: "hci0")

        try await session.control("SetTxPower", [.string(id.rawValue), .uint16(0), .int16(-6)])

        let path = try DBusObjectPath(id.rawValue)
        #expect(await session.connection.property("TxPower", of: BlueZ.advertisementInterface, at: path) == .int16(-6))
    }

    @Test("a process other than the bluetoothd it was registered with cannot set TxPower")
    func othersCannotSetTxPower() async throws {
        let session = try await StandInSession()
        var advertisement = Self.thermometer
        advertisement.txPower = 0
        let id = try await session.manager.register(.advertisement(advertisement), on: "hci0")
        let name = session.connection.uniqueName

        let set = await #expect(throws: TestFailure.self) {
            try await busctl(session.bus, ["set-property", name, id.rawValue, BlueZ.advertisementInterface, "TxPower", "n", "--", "-6"])
        }

        let path = try DBusObjectPath(id.rawValue)
        #expect(set?.description.contains("Access denied") == true, "\(set?.description ?? "")")
        #expect(await session.connection.property("TxPower", of: BlueZ.advertisementInterface, at: path) == .int16(0))
    }

    @Test("BlueZ may set TxPower on an advertisement that asks for no power, without it being read back")
    func tXPowerReportWithoutRequest() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")

        try await session.control("SetTxPower", [.string(id.rawValue), .uint16(0), .int16(7)])

        #expect(try await session.advertisements()[id.rawValue]?["TxPower"] == nil)
    }

    @Test("another program turning an adapter pairable is an event (BlueZ's signal does not say who)")
    func foreignPairableIsAnEvent() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())

        _ = try await busctl(session.bus, ["call", "org.bluez", "/org/bluez/hci0", "org.freedesktop.DBus.Properties", "Set",
                                           "ssv", "org.bluez.Adapter1", "Pairable", "b", "true"])

        #expect(try await events.next() == .pairable(adapter: "hci0", true))
    }

    @Test("powering on sets the adapter's Powered property")
    func poweringOnSetsTheAdapterPoweredProperty() async throws {
        let session = try await StandInSession()
        try await session.control("SetPowered", [.string("hci0"), .boolean(false)])

        try await session.manager.powerOn(adapter: "hci0")

        #expect(try await session.manager.adapters().first?.powered == true)
        #expect(try await session.calls() == ["Set Powered True"])
    }

    @Test("powering on while BlueZ is changing the adapter's power already is notPowered")
    func poweringOnWhileBlueZChangesThePowerIsNotPowered() async throws {
        let session = try await StandInSession()
        try await session.control("SetPowered", [.string("hci0"), .boolean(false)])
        try await session.control("SetPowerBusy", [.string("hci0"), .boolean(true)])

        await #expect(throws: PeripheralError(.notPowered, "the adapter is being powered on or off already; waiting for it")) {
            try await session.manager.powerOn(adapter: "hci0")
        }
    }

    @Test("Release from BlueZ is an event and the object goes")
    func releaseFromBlueZIsAnEventAndTheObjectGoes() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")

        try await session.control("Release", [.string(id.rawValue)])

        #expect(try await events.next() == .released(id))
        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("Release from a peer that is not the bluetoothd holding it is refused: the registration stays")
    func releaseFromAnotherPeerIsRefused() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")
        let stranger = try await DBusConnection.connect(to: .address(session.bus.address))

        let refused = await #expect(throws: DBusError.self) {
            try await stranger.call(
                destination: session.connection.uniqueName, path: DBusObjectPath(id.rawValue),
                interface: "org.bluez.LEAdvertisement1", member: "Release")
        }

        #expect(refused?.name == .accessDenied)
        #expect(await session.connection.exportedPaths.count == 1)
        // Still known, so it is unregistered from BlueZ, which has it (not refused as unknown).
        try await session.manager.unregister(id)
        #expect(try await session.calls().last == "UnregisterAdvertisement \(id)")
    }

    @Test("a powered change of the adapter is an event")
    func aPoweredChangeOfTheAdapterIsAnEvent() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())

        try await session.control("SetPowered", [.string("hci0"), .boolean(false)])

        #expect(try await events.next().anyGeneration == .adapterPowered("hci0", false))
    }

    @Test("an adapter removed releases its advertisements and is an event")
    func anAdapterRemovedReleasesItsAdvertisementsAndIsAnEvent() async throws {
        let session = try await StandInSession(adapters: ["hci0", "hci1"])
        let events = await EventLog.reading(try await session.manager.events())
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci1")

        try await session.control("RemoveAdapter", [.string("hci1")])

        // BlueZ sends Release, then InterfacesRemoved. The call's handler and the signal race in
        // here; when the removal wins, the registration is already forgotten and Release is moot.
        var seen = [try await events.next()]
        if seen == [.released(id)] { seen.append(try await events.next()) }
        #expect(seen.last == .adapterRemoved("hci1", id.generation))
        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("bluetoothd killed and restarted is vanished, appeared, then the adapter, in order")
    func bluetoothdKilledAndRestartedIsVanishedAppearedThenTheAdapter() async throws {
        var session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        let first = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0").generation

        session.standIn.crash()
        session.standIn = try await BlueZStandIn(bus: session.bus, adapters: [])
        try await session.control("AddAdapter", [.string("hci0")])

        let seen = try await events.next(3)
        let second = try #require(seen[1].generation)
        #expect(seen == [.bluezVanished(first), .bluezAppeared(second), .adapterAdded("hci0", second)])
        #expect(second.number == first.number + 1 && second.name != first.name)
        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("an adapter that appears while adapters() waits for BlueZ is still an event")
    func anAdapterThatAppearsWhileAdaptersWaitsIsStillAnEvent() async throws {
        // As after a restart of bluetoothd: the adapter registers while our GetManagedObjects
        // waits in its queue, so InterfacesAdded and the reply listing the adapter come together.
        let session = try await StandInSession(adapters: [])
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddAdapterWhenAsked", [.string("hci0")])

        let adapters = try await session.manager.adapters()

        #expect(adapters.map(\.name) == ["hci0"])
        #expect(try await events.next().anyGeneration == .adapterAdded("hci0"))
    }

    @Test("after bluetoothd restarted, its old registrations are not registered any more")
    func afterBluetoothdRestartedOldRegistrationsAreGone() async throws {
        var session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        let id = try await session.manager.register(.advertisement(Self.thermometer), on: "hci0")
        session.standIn.crash()
        session.standIn = try await BlueZStandIn(bus: session.bus)
        _ = try await events.next(2)

        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.unregister(id)
        }

        #expect(error?.code == .notRegistered)
        #expect(try await session.calls().isEmpty)
    }
}

@Suite("BlueZPeripheralManager on a bus that refuses")
struct BlueZRefusalTests {
    @Test("events() fails when the bus will not let BlueZ be watched")
    func eventsFailWhenTheBusRefuses() async throws {
        let bus = try await PrivateBus.refusingGetNameOwner()
        let manager = BlueZPeripheralManager(connection: try await DBusConnection.connect(to: .address(bus.address)))

        await #expect(throws: DBusError.self) { _ = try await manager.events() }
    }
}
