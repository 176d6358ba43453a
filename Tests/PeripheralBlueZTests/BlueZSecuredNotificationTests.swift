import DBus
import Peripheral
import PeripheralBlueZ
import TestSupport
import Testing

/// bluetoothd sends a characteristic's change to every subscribed central alike
/// (gatt-database.c's send_notification_to_devices), so bleadvd cannot keep a secured
/// characteristic's notification from one central while it serves another: its change waits
/// while a central bleadvd does not admit, and that may be bonded, is connected (#64 item 3).
@Suite("a secured characteristic's changes reach no central bleadvd does not admit")
struct BlueZSecuredNotificationTests {
    static let owner = "00:AA:02:00:00:01"  // the stand-in's central: its reads and writes come from it
    static let stranger = "00:AA:02:00:00:77"
    static let state = GATTCharacteristicID(service: "lock", characteristic: "state")

    static let lock = GATTApplication(services: [
        GATTService(name: "lock", uuid: try! BluetoothUUID("6e400010-b5a3-f393-e0a9-e50e24dcca9e"), characteristics: [
            GATTCharacteristic(
                name: "state", uuid: try! BluetoothUUID("6e400011-b5a3-f393-e0a9-e50e24dcca9e"),
                flags: [.read, .write, .notify], format: GATTFormat(.uint8), value: [0], security: .encrypted),
        ]),
    ])

    /// How the stranger came to be connected and bonded around bleadvd.
    enum Arrival: String, CaseIterable, CustomStringConvertible {
        case bondedConnects = "a bonded central connects"
        case connectedPairs = "a connected central pairs"
        var description: String { rawValue }
    }

    /// A session admitting the owner alone, with the lock registered; its state's path.
    static func lockRegistered() async throws -> (StandInSession, EventLog, RegistrationID, String) {
        let session = try await StandInSession(admits: { $0 == owner })
        let events = await EventLog.reading(try await session.manager.events())
        let id = try await session.manager.register(.application(lock), on: "hci0")
        return (session, events, id, id.rawValue + "/service0/char0")
    }

    /// The stranger connected and bonded, the manager told of it.
    static func strangerArrives(_ arrival: Arrival, _ session: StandInSession, _ events: EventLog) async throws {
        switch arrival {
        case .bondedConnects:
            try await session.control("AddDevice", [.string("hci0"), .string(stranger), .string(""), .boolean(true)])
            try await session.control("Connect", [.string("hci0"), .string(stranger)])
            #expect(try await events.next() == .connected(central: stranger, adapter: "hci0"))
        case .connectedPairs:
            try await session.control("Connect", [.string("hci0"), .string(stranger)])
            try await session.control("Pair", [.string("hci0"), .string(stranger)])
            #expect(try await events.next(2) == [.connected(central: stranger, adapter: "hci0"), .paired(central: stranger, adapter: "hci0")])
        }
    }

    @Test("a set value is not notified while a central bonded around bleadvd is connected", arguments: Arrival.allCases)
    func setHeld(arrival: Arrival) async throws {
        let (session, events, id, path) = try await Self.lockRegistered()
        try await Self.strangerArrives(arrival, session, events)

        try await session.manager.updateValue([1], of: Self.state, in: id, to: nil)

        #expect(!(try await session.calls()).contains { $0.hasPrefix("notified \(path)") })
        #expect(await session.connection.property("Value", of: BlueZ.characteristicInterface, at: try DBusObjectPath(path)) == .bytes([1]))
    }

    @Test("the owner's write is not notified while a central bonded around bleadvd is connected")
    func writeHeld() async throws {
        let (session, events, _, path) = try await Self.lockRegistered()
        try await Self.strangerArrives(.bondedConnects, session, events)

        let refusal = try await session.control("WriteCharacteristic", [.string(path), .bytes([1])])

        #expect(refusal == [.string("")])
        #expect(!(try await session.calls()).contains { $0.hasPrefix("notified \(path)") })
    }

    @Test("once that central leaves, subscribers are notified of the latest value, once")
    func heldChangeGoesOutWhenTheStrangerLeaves() async throws {
        let (session, events, id, path) = try await Self.lockRegistered()
        try await Self.strangerArrives(.bondedConnects, session, events)
        try await session.manager.updateValue([1], of: Self.state, in: id, to: nil)
        try await session.manager.updateValue([2], of: Self.state, in: id, to: nil)

        try await session.control("Disconnect", [.string("hci0"), .string(Self.stranger)])
        #expect(try await events.next() == .disconnected(central: Self.stranger, adapter: "hci0"))

        let notified = try await session.calls().filter { $0.hasPrefix("notified \(path)") }
        #expect(notified == ["notified \(path) 02"])
    }

    @Test("it is notified while the centrals connected are the owner's and one that never paired")
    func notifiedWithoutStrangers() async throws {
        let (session, events, id, path) = try await Self.lockRegistered()
        try await session.control("AddDevice", [.string("hci0"), .string(Self.owner), .string(""), .boolean(true)])
        try await session.control("Connect", [.string("hci0"), .string(Self.owner)])
        try await session.control("Connect", [.string("hci0"), .string(Self.stranger)])  // new to BlueZ: not paired
        #expect(try await events.next(2).count == 2)

        try await session.manager.updateValue([1], of: Self.state, in: id, to: nil)

        #expect(try await session.calls().last == "notified \(path) 01")
    }
}
