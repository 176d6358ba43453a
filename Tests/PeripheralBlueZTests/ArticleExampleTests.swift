import BluetoothModule
import DBus
import Peripheral
import PeripheralBlueZ
import Testing

/// The examples of the BluetoothModule and PeripheralBlueZ articles, run against the BlueZ
/// stand-in: the same code, on the stand-in's private bus instead of the system bus.
@Suite("The BluetoothModule and PeripheralBlueZ articles' examples", .timeLimit(.minutes(3)))
struct ArticleExampleTests {
    @Test("the module embedded over BlueZPeripheralManager puts an advertisement on air and says so")
    func embeddingTheModule() async throws {
        let session = try await StandInSession()

        let bluez = BlueZPeripheralManager(connection: session.connection)
        let module = BluetoothModule(manager: bluez, clock: ContinuousClock())
        let events = try await bluez.events()
        let feeding = Task { for await event in events { await module.handle(event) } }
        await module.configure(["door": try Beacon.eddystoneURL(url: "https://example.com", txPower: -20).advertisement()])
        let changes = await module.changes()
        try await module.on("door")
        let onAir = await changes.first { if case .on = $0[.advertisement("door")]?.phase { true } else { false } }

        #expect(onAir != nil)
        #expect(try await session.advertisements().count == 1)
        feeding.cancel()
    }

    @Test("the manager alone registers a validated advertisement and unregisters it")
    func usingTheManager() async throws {
        let session = try await StandInSession()

        let manager = BlueZPeripheralManager(connection: session.connection)
        let adapters = try await manager.adapters()
        let ad = Advertisement(kind: .broadcast, serviceData: [.init(uuid: BluetoothUUID(0xFCD2), data: [0x40])])
        try ad.validate(for: adapters.first)
        let id = try await manager.register(.advertisement(ad), on: "hci0")
        let held = try await session.advertisements().count
        try await manager.unregister(id)

        #expect(held == 1)
        #expect(try await session.advertisements().isEmpty)
    }

    @Test("the manager registers a battery service, changes its level in place and unregisters it")
    func gattExample() async throws {
        let session = try await StandInSession()
        let manager = BlueZPeripheralManager(connection: session.connection)

        let level = GATTCharacteristicID(service: "power", characteristic: "level")
        let battery = GATTApplication(services: [
            GATTService(name: "power", uuid: BluetoothUUID(0x180F), characteristics: [
                GATTCharacteristic(name: "level", uuid: BluetoothUUID(0x2A19), flags: [.read, .notify],
                                   format: GATTFormat(.uint8, range: 0...100), value: [80]),
            ]),
        ])
        let app = try await manager.register(.application(battery), on: "hci0")
        try await manager.updateValue([75], of: level, in: app, to: nil)   // every subscribed central is notified
        try await manager.unregister(app)

        let calls = try await session.calls()
        #expect(calls.contains("registered application \(app)"))
        #expect(calls.contains { $0.hasPrefix("notified \(app)/service0/char0 4b") })
        #expect(calls.last == "UnregisterApplication \(app)")
    }
}
