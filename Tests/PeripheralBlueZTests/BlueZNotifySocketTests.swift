import DBus
import Peripheral
import PeripheralBlueZ
import Synchronization
import TestSupport
import Testing

/// BlueZ 5.69 and later give each central a notification socket of its own (`AcquireNotify`,
/// bluez.git 8eb1dee87) where a characteristic exports `NotifyAcquired`: bleadvd knows whose
/// subscription it is and its MTU, notifies one central alone, and gives a secured
/// characteristic's socket only to centrals it admits (#81 items 1 and 2). What goes to all
/// stays a `PropertiesChanged` of `Value`, which reaches bonded centrals on later links too.
/// The stand-in plays bluetoothd's side.
@Suite("notification sockets, one per central (BlueZ 5.71 and later: 5.82 here)", .timeLimit(.minutes(3)))
struct BlueZNotifySocketTests {
    static let alice = "00:AA:02:00:00:01"
    static let bob = "00:AA:02:00:00:02"
    static let level = GATTCharacteristicID(service: "meter", characteristic: "level")
    static let alarm = GATTCharacteristicID(service: "meter", characteristic: "alarm")

    /// `level` notifies; `alarm` notifies and indicates.
    static func meter(security: GATTSecurity = .none) -> GATTApplication {
        GATTApplication(services: [
            GATTService(name: "meter", uuid: try! BluetoothUUID("6e400020-b5a3-f393-e0a9-e50e24dcca9e"), characteristics: [
                GATTCharacteristic(
                    name: "level", uuid: try! BluetoothUUID("6e400021-b5a3-f393-e0a9-e50e24dcca9e"),
                    flags: [.read, .notify], format: GATTFormat(.uint8), value: [0], security: security),
                GATTCharacteristic(
                    name: "alarm", uuid: try! BluetoothUUID("6e400022-b5a3-f393-e0a9-e50e24dcca9e"),
                    flags: [.read, .notify, .indicate], format: GATTFormat(.uint8), value: [0]),
            ]),
        ])
    }

    /// A session whose adapter is BlueZ `release`'s, with the meter registered; `level`'s path.
    static func meterRegistered(
        release: String = "5.82", security: GATTSecurity = .none, admits: @escaping @Sendable (String) -> Bool = { _ in true }
    ) async throws -> (StandInSession, EventLog, RegistrationID, String) {
        let session = try await StandInSession(admits: admits)
        try await session.control("SetRelease", [.string("hci0"), .string(release)])
        let events = await EventLog.reading(try await session.manager.events())
        let id = try await session.manager.register(.application(meter(security: security)), on: "hci0")
        return (session, events, id, id.rawValue + "/service0/char0")
    }

    /// bluetoothd's AcquireNotify for `central`: "" or the error name bleadvd answered.
    @discardableResult
    static func acquire(_ session: StandInSession, _ path: String, _ central: String, mtu: UInt16 = 247) async throws -> String {
        try await session.control("AcquireNotify", [.string(path), .string(central), .uint16(mtu)])[0].string ?? "?"
    }

    /// What `central`'s socket holds now.
    static func notifications(_ session: StandInSession, _ path: String, _ central: String) async throws -> [[UInt8]] {
        (try await session.control("Notifications", [.string(path), .string(central)])[0].arrayElements ?? []).map { $0.bytes ?? [] }
    }

    @Test("a central's subscription names the central and its MTU")
    func subscriptionNamesItsCentral() async throws {
        let (session, events, _, path) = try await Self.meterRegistered()

        let refusal = try await Self.acquire(session, path, Self.alice, mtu: 185)

        #expect(refusal == "")
        #expect(try await events.next() == .gatt(GATTEvent(Self.level, .subscribed, central: Self.alice, mtu: 185)))
    }

    @Test("a value for all is a PropertiesChanged of Value, which bluetoothd sends every subscriber, and goes through no socket")
    func valueForAllIsPropertiesChanged() async throws {
        let (session, _, id, path) = try await Self.meterRegistered()
        try await Self.acquire(session, path, Self.alice)
        try await Self.acquire(session, path, Self.bob)

        try await session.manager.updateValue([5], of: Self.level, in: id, to: nil)

        #expect(try await session.calls().contains("notified \(path) 05"))
        #expect(try await Self.notifications(session, path, Self.alice) == [])
        #expect(try await Self.notifications(session, path, Self.bob) == [])
    }

    @Test("a value set for one central reaches that central and not the other")
    func valueForOneCentral() async throws {
        let (session, _, id, path) = try await Self.meterRegistered()
        try await Self.acquire(session, path, Self.alice)
        try await Self.acquire(session, path, Self.bob)

        try await session.manager.updateValue([6], of: Self.level, in: id, to: Self.bob.lowercased())

        #expect(try await Self.notifications(session, path, Self.bob) == [[6]])
        #expect(try await Self.notifications(session, path, Self.alice) == [])
    }

    @Test("an empty value for one central is refused: bluetoothd would read it as the socket's end")
    func emptyValueForOneCentralRefused() async throws {
        let (session, _, id, path) = try await Self.meterRegistered()
        try await Self.acquire(session, path, Self.alice)

        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.updateValue([], of: Self.level, in: id, to: Self.alice)
        }

        #expect(error?.code == .invalidValue)
        #expect(try await Self.notifications(session, path, Self.alice) == [])
    }

    @Test("a secured value for one central bleadvd no longer admits is refused, and nothing is sent")
    func securedValueForARevokedCentralRefused() async throws {
        let admitted = Mutex<Set<String>>([Self.alice])
        let (session, _, id, path) = try await Self.meterRegistered(security: .encrypted, admits: { central in admitted.withLock { $0.contains(central) } })
        try await Self.acquire(session, path, Self.alice)
        admitted.withLock { $0 = [] }

        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.updateValue([9], of: Self.level, in: id, to: Self.alice)
        }

        #expect(error?.code == .accessDenied)
        #expect(try await Self.notifications(session, path, Self.alice) == [])
    }

    @Test("a value for one central is a notification, not the characteristic's value: reads still get the old one")
    func valueForOneCentralIsNotStored() async throws {
        let (session, _, id, path) = try await Self.meterRegistered()
        try await Self.acquire(session, path, Self.alice)

        try await session.manager.updateValue([6], of: Self.level, in: id, to: Self.alice)

        #expect(try await session.control("ReadCharacteristic", [.string(path), .uint16(0)]) == [.bytes([0])])
    }

    @Test("a value for a central that is not subscribed is refused, naming those that are")
    func valueForAnUnsubscribedCentralIsRefused() async throws {
        let (session, _, id, path) = try await Self.meterRegistered()
        try await Self.acquire(session, path, Self.alice)

        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.updateValue([6], of: Self.level, in: id, to: Self.bob)
        }

        #expect(error?.code == .unknownName)
        #expect(error?.message.contains("subscribed: \(Self.alice)") == true, "\(error?.message ?? "")")
    }

    @Test("a closed socket ends that central's subscription, and only its")
    func closedSocketEndsTheSubscription() async throws {
        let (session, events, _, path) = try await Self.meterRegistered()
        try await Self.acquire(session, path, Self.alice)
        try await Self.acquire(session, path, Self.bob)
        _ = try await events.next(2)

        try await session.control("CloseNotify", [.string(path), .string(Self.alice)])

        #expect(try await events.next() == .gatt(GATTEvent(Self.level, .unsubscribed, central: Self.alice)))
    }

    @Test("a characteristic that indicates keeps BlueZ's Value path: no NotifyAcquired")
    func indicatingCharacteristicKeepsValue() async throws {
        let (session, _, id, path) = try await Self.meterRegistered()
        let alarm = id.rawValue + "/service0/char1"

        let objects = try await session.control("GattObjects")[0]
        try await session.manager.updateValue([1], of: Self.alarm, in: id, to: nil)

        #expect(Self.characteristic(path, in: objects)?["NotifyAcquired"] != nil)
        #expect(Self.characteristic(alarm, in: objects)?["NotifyAcquired"] == nil)
        #expect(try await session.calls().contains("notified \(alarm) 01"))
    }

    @Test("on BlueZ 5.66 no characteristic offers a socket, and one central alone is refused")
    func olderBlueZKeepsValue() async throws {
        let (session, _, id, path) = try await Self.meterRegistered(release: "5.66")

        let objects = try await session.control("GattObjects")[0]
        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.updateValue([6], of: Self.level, in: id, to: Self.alice)
        }
        try await session.manager.updateValue([7], of: Self.level, in: id, to: nil)

        #expect(Self.characteristic(path, in: objects)?["NotifyAcquired"] == nil)
        #expect(error?.code == .rejected)
        #expect(try await session.calls().contains("notified \(path) 07"))
    }

    @Test("a secured characteristic gives no socket to a central bleadvd does not admit")
    func securedRefusesTheStranger() async throws {
        let (session, _, _, path) = try await Self.meterRegistered(security: .encrypted, admits: { $0 == Self.alice })

        let refusal = try await Self.acquire(session, path, Self.bob)

        #expect(refusal == "org.bluez.Error.Failed")
    }

    @Test("a secured value reaches the admitted central's socket at once while a bonded stranger is connected, and Value waits")
    func securedValueReachesTheSocketWhileValueWaits() async throws {
        let (session, events, id, path) = try await Self.meterRegistered(security: .encrypted, admits: { $0 == Self.alice })
        try await Self.acquire(session, path, Self.alice)
        try await session.control("AddDevice", [.string("hci0"), .string(Self.bob), .string(""), .boolean(true)])
        try await session.control("Connect", [.string("hci0"), .string(Self.bob)])
        _ = try await events.next(2)

        try await session.manager.updateValue([9], of: Self.level, in: id, to: nil)

        #expect(try await Self.notifications(session, path, Self.alice) == [[9]])
        #expect(!(try await session.calls()).contains { $0.hasPrefix("notified \(path)") })
    }

    @Test("a full socket makes no one wait: the other central gets every value, the full one the latest, and what it lost is counted")
    func fullSocketIsCoalesced() async throws {
        let (session, _, id, path) = try await Self.meterRegistered()
        try await Self.acquire(session, path, Self.alice)
        try await Self.acquire(session, path, Self.bob)
        var bobGot: [[UInt8]] = []

        for i in 0..<3_000 {
            for central in [Self.alice, Self.bob] {
                try await session.manager.updateValue([UInt8(i & 0xFF), UInt8(i >> 8)], of: Self.level, in: id, to: central)
            }
            if i % 100 == 99 { bobGot += try await Self.notifications(session, path, Self.bob) }
        }
        let dropped = await session.manager.notificationsDropped()
        var aliceGot: [[UInt8]] = []
        try await eventually("alice's socket gave the latest value") {
            aliceGot += try await Self.notifications(session, path, Self.alice)
            return aliceGot.last == [0xB7, 0x0B]
        }

        #expect(bobGot.count == 3_000)
        #expect(dropped[Self.alice, default: 0] > 0)
        #expect(dropped[Self.bob] == 0)
        #expect(aliceGot.count + dropped[Self.alice, default: 0] == 3_000)
    }

    /// A characteristic's properties in a `GattObjects` answer.
    static func characteristic(_ path: String, in objects: DBusValue) -> [String: DBusValue]? {
        for entry in objects.dictionaryEntries ?? [] where entry.key.string == path {
            for interface in entry.value.dictionaryEntries ?? [] where interface.key.string == BlueZ.characteristicInterface {
                return interface.value.variantDictionary
            }
        }
        return nil
    }
}
