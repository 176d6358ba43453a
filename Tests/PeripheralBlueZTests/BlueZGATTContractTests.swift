import DBus
import Peripheral
import PeripheralBlueZ
import TestSupport
import Synchronization
import Testing

/// The GATT half of the contract with BlueZ, against the stand-in (which parses an application
/// as gatt-database.c does, and calls ReadValue/WriteValue/StartNotify as a central's requests
/// make bluetoothd call them). testbed/scenarios/58-gatt.sh does the same with the real
/// bluetoothd and a real central.
@Suite("BlueZPeripheralManager's GATT application against a BlueZ stand-in")
struct BlueZGATTContractTests {
    static let level = GATTCharacteristicID(service: "power", characteristic: "level")
    static let brightness = GATTCharacteristicID(service: "lamp", characteristic: "brightness")

    static let application = GATTApplication(services: [
        GATTService(name: "lamp", uuid: try! BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e"), characteristics: [
            GATTCharacteristic(
                name: "brightness", uuid: try! BluetoothUUID("6e400002-b5a3-f393-e0a9-e50e24dcca9e"),
                flags: [.read, .write, .notify], format: GATTFormat(.uint8, range: 0...100), value: [10],
                userDescription: "Brightness"),
            GATTCharacteristic(
                name: "label", uuid: try! BluetoothUUID("6e400003-b5a3-f393-e0a9-e50e24dcca9e"),
                flags: [.read, .write], format: GATTFormat(.utf8, maximumLength: 8), value: Array("desk".utf8)),
        ]),
        GATTService(name: "power", uuid: BluetoothUUID(0x180F), characteristics: [
            GATTCharacteristic(
                name: "level", uuid: BluetoothUUID(0x2A19), flags: [.read, .notify],
                format: GATTFormat(.uint8, range: 0...100), value: [80]),
        ]),
    ])

    /// The characteristic paths the stand-in holds, by UUID.
    static func characteristics(_ session: StandInSession) async throws -> [String: String] {
        var result: [String: String] = [:]
        for entry in try await session.control("GattObjects")[0].dictionaryEntries ?? [] {
            let interfaces = entry.value.dictionaryEntries ?? []
            guard let characteristic = interfaces.first(where: { $0.key.string == "org.bluez.GattCharacteristic1" }),
                  let uuid = characteristic.value.variantDictionary?["UUID"]?.string else { continue }
            result[uuid] = entry.key.string
        }
        return result
    }

    @Test("registering lets BlueZ read every service and characteristic back before it replies")
    func registeringExportsTheWholeApplication() async throws {
        let session = try await StandInSession()

        let id = try await session.manager.register(.application(Self.application), on: "hci0")

        #expect(try await session.calls() == ["RegisterApplication \(id)", "registered application \(id)"])
        #expect(try await Self.characteristics(session).keys.sorted() == [
            "00002a19-0000-1000-8000-00805f9b34fb", "6e400002-b5a3-f393-e0a9-e50e24dcca9e",
            "6e400003-b5a3-f393-e0a9-e50e24dcca9e",
        ])
    }

    @Test("each characteristic is exported with its UUID, service, flags and value, as introspection says")
    func characteristicShape() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.application(Self.application), on: "hci0")

        let path = try DBusObjectPath(id.rawValue + "/service1/char0")
        let xml = try await session.connection.call(
            destination: session.connection.uniqueName, path: path, interface: "org.freedesktop.DBus.Introspectable",
            member: "Introspect")[0].string ?? ""

        for member in ["ReadValue", "WriteValue", "StartNotify", "StopNotify", "\"UUID\"", "\"Service\"", "\"Flags\"", "\"Value\"", "\"Notifying\""] {
            #expect(xml.contains(member), "no \(member) in the introspection of \(path)")
        }
        #expect(await session.connection.property("Flags", of: "org.bluez.GattCharacteristic1", at: path) == .strings(["notify", "read"]))
    }

    @Test("a user description is a read-only descriptor 0x2901 of its characteristic, which BlueZ reads")
    func userDescription() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = id.rawValue + "/service0/char0/desc0"

        let objects = try await session.control("GattObjects")[0].dictionaryEntries ?? []
        let descriptor = objects.first { $0.key.string == path }?.value.dictionaryEntries?
            .first { $0.key.string == "org.bluez.GattDescriptor1" }?.value.variantDictionary
        let text = try await session.control("ReadDescriptor", [.string(path)])

        #expect(descriptor?["UUID"] == .string("00002901-0000-1000-8000-00805f9b34fb"))
        #expect(descriptor?["Characteristic"] == .objectPath(try DBusObjectPath(id.rawValue + "/service0/char0")))
        #expect(descriptor?["Flags"] == .strings(["read"]))
        #expect(text == [.bytes(Array("Brightness".utf8))])
    }

    @Test("a read returns the value")
    func readReturnsValue() async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["00002a19-0000-1000-8000-00805f9b34fb"]!

        let value = try await session.control("ReadCharacteristic", [.string(path), .uint16(0)])

        #expect(value == [.bytes([80])])
    }

    /// A lock: its state readable by anyone paired, its PIN write-only and for authenticated links.
    static let lock = GATTApplication(services: [
        GATTService(name: "lock", uuid: try! BluetoothUUID("6e400010-b5a3-f393-e0a9-e50e24dcca9e"), characteristics: [
            GATTCharacteristic(
                name: "state", uuid: try! BluetoothUUID("6e400011-b5a3-f393-e0a9-e50e24dcca9e"), flags: [.read, .notify],
                format: GATTFormat(.uint8), value: [0], security: .encrypted),
            GATTCharacteristic(
                name: "pin", uuid: try! BluetoothUUID("6e400012-b5a3-f393-e0a9-e50e24dcca9e"),
                flags: [.write, .writeWithoutResponse], format: GATTFormat(.utf8, maximumLength: 8), value: [],
                security: .authenticated),
        ]),
    ])

    @Test("each operation a characteristic allows carries its security, in the flags gatt-database.c parses")
    func securityFlags() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.application(Self.lock), on: "hci0")

        let state = try DBusObjectPath(id.rawValue + "/service0/char0"), pin = try DBusObjectPath(id.rawValue + "/service0/char1")

        #expect(try await session.calls().last == "registered application \(id)")
        #expect(await session.connection.property("Flags", of: BlueZ.characteristicInterface, at: state)
            == .strings(["encrypt-notify", "encrypt-read"]))
        #expect(await session.connection.property("Flags", of: BlueZ.characteristicInterface, at: pin)
            == .strings(["encrypt-authenticated-write", "write-without-response"]))
    }

    @Test("a central's write to a write-only characteristic goes out in no signal")
    func secretWriteNotAnnounced() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.application(Self.lock), on: "hci0")
        let pin = id.rawValue + "/service0/char1", state = id.rawValue + "/service0/char0"

        try await session.control("WriteCharacteristic", [.string(pin), .bytes(Array("1234".utf8))])
        try await session.manager.updateValue([1], of: GATTCharacteristicID(service: "lock", characteristic: "state"), in: id, to: nil)

        // The stand-in hears every PropertiesChanged in order: the state's, and none before it.
        let calls = try await session.calls()
        #expect(calls.last == "notified \(state) 01")
        #expect(!calls.contains { $0.hasPrefix("notified \(pin)") }, "\(calls)")
    }

    @Test("a write-only value is kept nowhere on the bus: not when registered with one, written or set")
    func secretNotExported() async throws {
        let session = try await StandInSession()
        var application = Self.lock
        application.services[0].characteristics[1].value = Array("1234".utf8)  // as after a write and a restart
        let id = try await session.manager.register(.application(application), on: "hci0")
        let path = try DBusObjectPath(id.rawValue + "/service0/char1")

        try await session.control("WriteCharacteristic", [.string(path.rawValue), .bytes(Array("5678".utf8))])
        try await session.manager.updateValue(Array("9999".utf8), of: GATTCharacteristicID(service: "lock", characteristic: "pin"), in: id, to: nil)
        let held = await session.connection.property("Value", of: BlueZ.characteristicInterface, at: path)
        let objects = try await session.control("GattObjects")[0].dictionaryEntries ?? []
        let pin = objects.first { $0.key.string == id.rawValue + "/service0/char1" }?.value.dictionaryEntries?
            .first { $0.key.string == BlueZ.characteristicInterface }?.value.variantDictionary

        #expect(pin?["Value"] == .bytes([]))
        #expect(held == .bytes([]))
        #expect(pin?["UUID"] == .string("6e400012-b5a3-f393-e0a9-e50e24dcca9e"))
    }

    @Test("a changed value is announced with PropertiesChanged, which BlueZ notifies")
    func updateNotifies() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["00002a19-0000-1000-8000-00805f9b34fb"]!

        try await session.manager.updateValue([55], of: Self.level, in: id, to: nil)

        #expect(try await session.calls().last == "notified \(path) 37")
    }

    @Test("a write that fits the format is taken and reported with the central's address")
    func writeTaken() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        _ = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["6e400002-b5a3-f393-e0a9-e50e24dcca9e"]!

        let reply = try await session.control("WriteCharacteristic", [.string(path), .bytes([42])])

        #expect(reply == [.string("")])
        #expect(try await events.next() == .gatt(GATTEvent(Self.brightness, .written([42], .number(42)), central: "00:AA:02:00:00:01", mtu: 23)))
        #expect(try await session.control("ReadCharacteristic", [.string(path), .uint16(0)]) == [.bytes([42])])
    }

    /// A lock whose value only a central bleadvd admits (bonded in its window) may read or write.
    static let secured = GATTApplication(services: [
        GATTService(name: "door", uuid: try! BluetoothUUID("6e400010-b5a3-f393-e0a9-e50e24dcca9e"), characteristics: [
            GATTCharacteristic(
                name: "lock", uuid: try! BluetoothUUID("6e400011-b5a3-f393-e0a9-e50e24dcca9e"),
                flags: [.read, .write], format: GATTFormat(.utf8, maximumLength: 8), value: Array("locked".utf8), security: .encrypted),
        ]),
    ])

    @Test("a central bonded around bleadvd (bluetoothctl's agent, any local user) reads nothing of a secured characteristic and writes nothing to it: NotAuthorized, nothing reported")
    func securedRefusedToCentralsNotAdmitted() async throws {
        let session = try await StandInSession(admits: { $0 == "00:AA:02:00:00:77" })
        let events = await EventLog.reading(try await session.manager.events())
        _ = try await session.manager.register(.application(Self.secured), on: "hci0")
        let path = try await Self.characteristics(session)["6e400011-b5a3-f393-e0a9-e50e24dcca9e"]!

        let read = await #expect(throws: DBusError.self) { try await session.control("ReadCharacteristic", [.string(path), .uint16(0)]) }
        let write = try await session.control("WriteCharacteristic", [.string(path), .bytes(Array("open".utf8))])

        #expect(read?.name.rawValue == "org.bluez.Error.NotAuthorized", "\(String(describing: read))")
        #expect(write.first?.string?.contains("org.bluez.Error.NotAuthorized") == true, "\(write)")
        await #expect(throws: TestFailure.self) { try await events.next(within: .milliseconds(300)) }
    }

    @Test("a central bleadvd admits reads and writes the secured characteristic")
    func securedServedToAdmitted() async throws {
        let session = try await StandInSession(admits: { $0 == "00:AA:02:00:00:01" })
        _ = try await session.manager.register(.application(Self.secured), on: "hci0")
        let path = try await Self.characteristics(session)["6e400011-b5a3-f393-e0a9-e50e24dcca9e"]!

        let read = try await session.control("ReadCharacteristic", [.string(path), .uint16(0)])

        #expect(read == [.bytes(Array("locked".utf8))])
    }

    @Test("a write from a process other than the bluetoothd it was registered with is refused and reported nowhere")
    func forgedWriteRefused() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        _ = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["6e400002-b5a3-f393-e0a9-e50e24dcca9e"]!
        let name = session.connection.uniqueName

        let forged = await #expect(throws: TestFailure.self) {
            try await busctl(session.bus, ["call", name, path, BlueZ.characteristicInterface, "WriteValue", "aya{sv}", "1", "99",
                                           "1", "device", "o", "/org/bluez/hci0/dev_00_AA_02_00_00_09"])
        }
        try await session.control("WriteCharacteristic", [.string(path), .bytes([42])])

        #expect(forged?.description.contains("Access denied") == true, "\(forged?.description ?? "")")
        // The first event is bluetoothd's write: the forged one made none.
        #expect(try await events.next() == .gatt(GATTEvent(Self.brightness, .written([42], .number(42)), central: "00:AA:02:00:00:01", mtu: 23)))
    }

    @Test("a read or a subscription from a process other than bluetoothd is refused", arguments: ["ReadValue", "StartNotify"])
    func othersCannotReadOrSubscribe(member: String) async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["6e400002-b5a3-f393-e0a9-e50e24dcca9e"]!
        let name = session.connection.uniqueName
        let arguments = member == "ReadValue" ? ["a{sv}", "0"] : []

        let refused = await #expect(throws: TestFailure.self) {
            try await busctl(session.bus, ["call", name, path, BlueZ.characteristicInterface, member] + arguments)
        }

        #expect(refused?.description.contains("Access denied") == true, "\(refused?.description ?? "")")
    }

    @Test("a write of the wrong length gets InvalidValueLength and changes nothing",
          arguments: [([UInt8]([1, 2]), "org.bluez.Error.InvalidValueLength"), ([101], "org.bluez.Error.Failed")])
    func writeRefused(value: [UInt8], error: String) async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["6e400002-b5a3-f393-e0a9-e50e24dcca9e"]!

        let reply = try await session.control("WriteCharacteristic", [.string(path), .bytes(value)])

        #expect(reply == [.string(error)])
        #expect(try await session.control("ReadCharacteristic", [.string(path), .uint16(0)]) == [.bytes([10])])
    }

    @Test("hostile writes to a text characteristic are refused and change nothing",
          arguments: [([UInt8](repeating: 0x41, count: 9), "org.bluez.Error.InvalidValueLength"),
                      ([UInt8](repeating: 0x41, count: 600), "org.bluez.Error.InvalidValueLength"),
                      ([0xFF, 0xFE], "org.bluez.Error.Failed"), ([0xC3], "org.bluez.Error.Failed")])
    func hostileTextWrites(value: [UInt8], error: String) async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["6e400003-b5a3-f393-e0a9-e50e24dcca9e"]!

        let reply = try await session.control("WriteCharacteristic", [.string(path), .bytes(value)])

        #expect(reply == [.string(error)])
        #expect(try await session.control("ReadCharacteristic", [.string(path), .uint16(0)]) == [.bytes(Array("desk".utf8))])
    }

    @Test("a read from within the value returns the rest (a long read); past its end, InvalidOffset")
    func readOffsets() async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["6e400003-b5a3-f393-e0a9-e50e24dcca9e"]!

        let rest = try await session.control("ReadCharacteristic", [.string(path), .uint16(2)])
        let past = await #expect(throws: DBusError.self) {
            try await session.control("ReadCharacteristic", [.string(path), .uint16(5)])
        }

        #expect(rest == [.bytes(Array("sk".utf8))])
        #expect(past?.name.rawValue == "org.bluez.Error.InvalidOffset")
    }

    @Test("a long read comes from one value: a set between its parts does not tear it")
    func longReadFromOneSnapshot() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["6e400003-b5a3-f393-e0a9-e50e24dcca9e"]!
        let label = GATTCharacteristicID(service: "lamp", characteristic: "label")
        let long = Array("a label longer than one response".utf8)  // 32 bytes; a response carries 22
        try await session.manager.updateValue(long, of: label, in: id, to: nil)

        let first = try await session.control("ReadCharacteristic", [.string(path), .uint16(0)])
        try await session.manager.updateValue(Array("sofa".utf8), of: label, in: id, to: nil)
        let rest = try await session.control("ReadCharacteristic", [.string(path), .uint16(22)])
        let next = try await session.control("ReadCharacteristic", [.string(path), .uint16(0)])

        // bluetoothd sends the central the first 22 bytes of the first reply, then the rest.
        #expect(Array((first[0].bytes ?? []).prefix(22)) + (rest[0].bytes ?? []) == long)
        #expect(next == [.bytes(Array("sofa".utf8))])
    }

    @Test("a write to a read-only characteristic is not permitted")
    func writeToReadOnly() async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["00002a19-0000-1000-8000-00805f9b34fb"]!

        let reply = try await session.control("WriteCharacteristic", [.string(path), .bytes([1])])

        #expect(reply == [.string("org.bluez.Error.NotPermitted")])
    }

    @Test("a subscription is reported and sets Notifying")
    func subscription() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        _ = try await session.manager.register(.application(Self.application), on: "hci0")
        let path = try await Self.characteristics(session)["00002a19-0000-1000-8000-00805f9b34fb"]!

        try await session.control("Subscribe", [.string(path), .boolean(true)])

        #expect(try await events.next() == .gatt(GATTEvent(Self.level, .subscribed, central: "")))
        #expect(await session.connection.property("Notifying", of: "org.bluez.GattCharacteristic1", at: try DBusObjectPath(path)) == .boolean(true))
    }

    @Test("unregistering removes every exported object")
    func unregisterRemovesObjects() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.application(Self.application), on: "hci0")

        try await session.manager.unregister(id)

        #expect(try await session.calls().last == "UnregisterApplication \(id)")
        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("an application BlueZ refuses leaves no object behind")
    func refusedLeavesNothing() async throws {
        let session = try await StandInSession()
        var broken = Self.application
        broken.services = []

        await #expect(throws: PeripheralError.self) { try await session.manager.register(.application(broken), on: "hci0") }

        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("an application BlueZ refuses is called an application in the error, not an advertisement")
    func refusedIsNamed() async throws {
        let session = try await StandInSession()
        var broken = Self.application
        broken.services = []

        let error = await #expect(throws: PeripheralError.self) { try await session.manager.register(.application(broken), on: "hci0") }

        #expect(error?.code == .failed)
        #expect(error?.message.hasPrefix("BlueZ or the kernel refused the GATT application") == true)
    }

    // MARK: Values answered when read

    /// Answers reads as the test says, counting them.
    final class Answerer: GATTReadAnswering {
        let asked = Mutex<[String]>([])
        let answer: Result<[UInt8], GATTReadError>

        init(_ answer: Result<[UInt8], GATTReadError>) {
            self.answer = answer
        }

        func answer(_ characteristic: GATTCharacteristicID, central: String) async throws(GATTReadError) -> [UInt8] {
            asked.withLock { $0.append("\(characteristic) by \(central)") }
            return try answer.get()
        }
    }

    /// The application with the label answered on read by `answerer`.
    static func answeredLabel(by answerer: Answerer) -> GATTApplication {
        var application = application
        application[GATTCharacteristicID(service: "lamp", characteristic: "label")]?.onRead = GATTReadHandler(answerer)
        return application
    }

    @Test("a read of a characteristic answered on read asks the answerer, with the central, and gives its answer, not the value held")
    func readAsksTheAnswerer() async throws {
        let session = try await StandInSession()
        let answerer = Answerer(.success(Array("fresh".utf8)))
        _ = try await session.manager.register(.application(Self.answeredLabel(by: answerer)), on: "hci0")
        let path = try await Self.characteristics(session)["6e400003-b5a3-f393-e0a9-e50e24dcca9e"]!

        let value = try await session.control("ReadCharacteristic", [.string(path), .uint16(0)])

        #expect(value == [.bytes(Array("fresh".utf8))])
        #expect(answerer.asked.withLock { $0 } == ["lamp.label by 00:AA:02:00:00:01"])
    }

    @Test("an answerer's error reaches bluetoothd as org.bluez.Error.Failed with a message that is no number: the central gets ATT 0x80")
    func answererErrorIsApplicationError() async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.application(Self.answeredLabel(by: Answerer(.failure(GATTReadError("exited 1"))))), on: "hci0")
        let path = try await Self.characteristics(session)["6e400003-b5a3-f393-e0a9-e50e24dcca9e"]!

        let error = await #expect(throws: DBusError.self) {
            try await session.control("ReadCharacteristic", [.string(path), .uint16(0)])
        }

        #expect(error?.name.rawValue == "org.bluez.Error.Failed")
        #expect(error.map { Int($0.message) == nil && Int($0.message, radix: 16) == nil } == true)
    }

    @Test("a characteristic not answered on read is read from the value held: the answerer is not asked")
    func otherReadsAskNoOne() async throws {
        let session = try await StandInSession()
        let answerer = Answerer(.success([1]))
        _ = try await session.manager.register(.application(Self.answeredLabel(by: answerer)), on: "hci0")
        let path = try await Self.characteristics(session)["00002a19-0000-1000-8000-00805f9b34fb"]!

        let value = try await session.control("ReadCharacteristic", [.string(path), .uint16(0)])

        #expect(value == [.bytes([80])])
        #expect(answerer.asked.withLock { $0 }.isEmpty)
    }

    @Test("a central bleadvd does not admit reads a secured characteristic answered on read: NotAuthorized, and no program is asked to run")
    func securedAnsweredReadRunsNothingForAStranger() async throws {
        let session = try await StandInSession(admits: { $0 == "00:AA:02:00:00:77" })
        let answerer = Answerer(.success([1]))
        var application = Self.secured
        application[GATTCharacteristicID(service: "door", characteristic: "lock")]?.onRead = GATTReadHandler(answerer)
        try #require(application.characteristics.first?.characteristic.onRead != nil)
        _ = try await session.manager.register(.application(application), on: "hci0")
        let path = try await Self.characteristics(session)["6e400011-b5a3-f393-e0a9-e50e24dcca9e"]!

        let read = await #expect(throws: DBusError.self) { try await session.control("ReadCharacteristic", [.string(path), .uint16(0)]) }

        #expect(read?.name.rawValue == "org.bluez.Error.NotAuthorized")
        #expect(answerer.asked.withLock { $0 }.isEmpty)
    }

    @Test("the rest of a long read is cut from the answer its first part got: the answerer is asked once")
    func longReadAsksOnce() async throws {
        let session = try await StandInSession()
        let long = Array("an answer longer than one response".utf8)
        let answerer = Answerer(.success(long))
        _ = try await session.manager.register(.application(Self.answeredLabel(by: answerer)), on: "hci0")
        let path = try await Self.characteristics(session)["6e400003-b5a3-f393-e0a9-e50e24dcca9e"]!

        let first = try await session.control("ReadCharacteristic", [.string(path), .uint16(0)])
        let rest = try await session.control("ReadCharacteristic", [.string(path), .uint16(22)])

        #expect(Array((first[0].bytes ?? []).prefix(22)) + (rest[0].bytes ?? []) == long)
        #expect(answerer.asked.withLock { $0.count } == 1)
    }
}
