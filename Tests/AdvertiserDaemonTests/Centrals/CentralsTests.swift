@testable import AdvertiserDaemon
import AdvertiserConfig
import AdvertiserControl
import DBus
import Events
import Foundation
import Peripheral
import PeripheralMocks
import Synchronization
import TestSupport
import Testing

/// The centrals component in process: the mock for BlueZ, a port that records the
/// announcements, the manual clock.
@Suite("The centrals connected", .timeLimit(.minutes(3)))
struct CentralsTests {
    typealias Component = Centrals<ManualClock>
    static let phone = "AA:BB:CC:DD:EE:01", tablet = "AA:BB:CC:DD:EE:02", stranger = "66:66:66:66:66:66"
    static let level = GATTCharacteristicID(service: "power", characteristic: "level")

    /// The signals the component sent, one line each, decoded from what would go on the bus.
    final class Port: ControlSignalling {
        let said = Mutex<[String]>([])
        func emit<Signal: ControlSignal>(_ signal: Signal, to destination: String?) async {
            let body = signal.body
            let line: String? = switch Signal.name {
            case ControlAPI.Connected.name: ControlAPI.Connected(body: body).map { "Connected \($0.central) \($0.adapter)" }
            case ControlAPI.Disconnected.name: ControlAPI.Disconnected(body: body).map { "Disconnected \($0.central) \($0.adapter) \($0.reason)" }
            case ControlAPI.LinkChanged.name:
                ControlAPI.LinkChanged(body: body).map { "LinkChanged \($0.central) \($0.adapter) \($0.mtu) [\($0.cut.joined(separator: ","))]" }
            case ControlAPI.Subscription.name: ControlAPI.Subscription(body: body).map { "Subscription \($0.id) \($0.subscribed)" + ($0.central.isEmpty ? "" : " \($0.central)") }
            default: nil
            }
            said.withLock { $0.append((line ?? "\(Signal.name) (unexpected)") + (destination.map { " to \($0)" } ?? "")) }
        }

        var all: [String] { said.withLock { $0 } }
    }

    struct Harness {
        let mock = MockPeripheralManager()
        let clock = ManualClock()
        let port = Port()
        let logs = LogLines()
        let loop: EventLoop
        let centrals: Component

        /// Centrals under `config`; `owners` are the centrals bleadvd's bond record admits.
        init(_ config: CentralsConfig = CentralsConfig(), owners: Set<String> = []) throws {
            mock.scriptBonds(.always(.success([Bond(central: CentralsTests.phone, name: nil)])))
            mock.scriptDisconnect(.always(.success(())))
            loop = try EventLoop.onNewThread(name: "centrals-test")
            centrals = Component(
                config: config, manager: mock, port: port, clock: clock, logger: logs.logger(), executor: loop, owners: { owners })
        }

        /// A listing, once the clock passed its wait for a read of the bonds.
        func listedPastItsWait() async throws -> [CentralState] {
            let listing = Task { await centrals.centrals() }
            try await eventually("the listing waits for the read") { clock.deadlines.contains(clock.now.advanced(by: Deadline.readWait)) }
            clock.advance(by: Deadline.readWait)
            return await listing.value
        }
    }

    @Test("a link's start and end are announced; while it lasts it is listed, bonded as BlueZ says, with the MTU of its last read or write")
    func linksListedAndAnnounced() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.take(.connected(Self.tablet, adapter: "hci0"))
        await h.centrals.take(.active(Self.phone, mtu: 185))
        h.clock.advance(by: .seconds(3))

        let listed = await h.centrals.centrals().sorted { $0.address < $1.address }
        await h.centrals.take(.disconnected(Self.tablet))

        #expect(listed == [
            CentralState(address: Self.phone, adapter: "hci0", sinceSeconds: 3, bonded: true, mtu: 185, idleSeconds: 3),
            CentralState(address: Self.tablet, adapter: "hci0", sinceSeconds: 3, bonded: false, mtu: nil, idleSeconds: 3),
        ])
        #expect(h.port.all == [
            "Connected \(Self.phone) hci0", "Connected \(Self.tablet) hci0", "LinkChanged \(Self.phone) hci0 185 []", "Disconnected \(Self.tablet) hci0 ",
        ])
    }

    @Test("a link asks BlueZ nothing: bluetoothd is setting it up while the central discovers, and a GetManagedObjects then took it 1.0-1.4 s (66 on Debian 12)")
    func linkCostsBlueZNothing() async throws {
        let h = try Harness()

        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.take(.active(Self.phone, mtu: 185))

        #expect(h.mock.calls.bondQueries.isEmpty)
    }

    @Test("bonded is BlueZ's answer when the centrals are listed: a central that bonded during its link is listed bonded a second later")
    func bondedAskedWhenListed() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.tablet, adapter: "hci0"))
        let before = await h.centrals.centrals().first?.bonded

        h.mock.scriptBonds(.always(.success([Bond(central: Self.tablet, name: nil)])))
        h.clock.advance(by: .seconds(1))
        let after = await h.centrals.centrals().first?.bonded

        #expect(before == false)
        #expect(after == true)
    }

    @Test("a thousand listings within a second ask BlueZ for the bonds once: the rest are answered from what bleadvd knows")
    func listingsAskBlueZOncePerSecond() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))

        var listed: [[CentralState]] = []
        for _ in 0..<1_000 { listed.append(await h.centrals.centrals()) }

        #expect(h.mock.calls.bondQueries.count == 1)
        #expect(Set(listed.map { $0.map(\.bonded) }) == [[true]])
    }

    @Test("a listing a second after BlueZ was last asked for the bonds asks it again, and none sooner")
    func listingAfterASecondAsksAgain() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        _ = await h.centrals.centrals()
        h.clock.advance(by: .milliseconds(999))
        _ = await h.centrals.centrals()

        h.clock.advance(by: .milliseconds(1))
        _ = await h.centrals.centrals()

        #expect(h.mock.calls.bondQueries == ["hci0", "hci0"])
    }

    @Test("a listing while BlueZ has not answered the last read of the bonds asks it nothing, however long that takes; before BlueZ's first answer, bonded is unknown")
    func listingDuringAReadAsksNothing() async throws {
        let h = try Harness()
        h.mock.scriptBonds(.neverAnswers)
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        let first = Task { await h.centrals.centrals() }
        try await eventually("the first listing waits for BlueZ") { h.clock.deadlines.contains(h.clock.now.advanced(by: Deadline.readWait)) }
        try await eventually("the first listing asked BlueZ") { h.mock.calls.bondQueries.count == 1 }
        h.clock.advance(by: .seconds(5))
        _ = await first.value

        let listed = try await h.listedPastItsWait()

        #expect(h.mock.calls.bondQueries.count == 1)
        #expect(listed.map(\.bonded) == [nil])
    }

    @Test("a listing while BlueZ does not answer the bonds answers within a second, bonded as BlueZ said last")
    func listingWhileBlueZIsSilent() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        _ = await h.centrals.centrals()
        h.mock.scriptBonds(.neverAnswers)
        h.clock.advance(by: .seconds(1))

        let listed = try await h.listedPastItsWait()

        #expect(listed.map(\.bonded) == [true])
        #expect(h.mock.calls.bondQueries.count == 2)
    }

    @Test("a listing while a call to BlueZ has waited half a second already does not wait for the bonds at all")
    func listingWhileBlueZIsKnownSilent() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        _ = await h.centrals.centrals()
        h.mock.scriptBonds(.neverAnswers)
        h.mock.scriptUnanswered(UnansweredCall(call: "GetManagedObjects", sentAt: 0, waited: .seconds(2)))
        h.clock.advance(by: .seconds(1))

        let listed = await h.centrals.centrals()

        #expect(listed.map(\.bonded) == [true])
    }

    @Test("a central beyond max_centrals is disconnected at once, and the journal and its Disconnected say why")
    func beyondMaximumDisconnected() async throws {
        let h = try Harness(CentralsConfig(maximum: 2))
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.take(.connected(Self.tablet, adapter: "hci0"))

        await h.centrals.take(.connected(Self.stranger, adapter: "hci0"))
        await h.centrals.take(.disconnected(Self.stranger))

        #expect(h.mock.calls.disconnected.map(\.central) == [Self.stranger])
        #expect(h.logs.all.contains("notice: \(Self.stranger): ending its link with hci0 (max_centrals 2: 2 already connected to hci0)"))
        #expect(h.port.all.last == "Disconnected \(Self.stranger) hci0 max_centrals 2: 2 already connected to hci0")
    }

    @Test("with the links full, the owner's phone (bonded through bleadvd) ends the least active stranger's link instead of being refused, however often the strangers read")
    func ownerTakesTheLeastActiveStrangersPlace() async throws {
        let h = try Harness(CentralsConfig(maximum: 2), owners: [Self.phone])
        await h.centrals.take(.connected(Self.stranger, adapter: "hci0"))
        await h.centrals.take(.connected(Self.tablet, adapter: "hci0"))
        h.clock.advance(by: .seconds(5))
        await h.centrals.take(.active(Self.tablet, mtu: nil))

        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))

        #expect(h.mock.calls.disconnected.map(\.central) == [Self.stranger])
        #expect(h.logs.all.contains(
            "notice: \(Self.stranger): ending its link with hci0 (max_centrals 2: \(Self.phone), bonded through bleadvd, takes the least active link's place)"))
        #expect(await h.centrals.links[Self.phone] != nil)
    }

    @Test("with the links full of owners, a newcomer that is one too is refused like any other")
    func ownersAmongOwnersRefused() async throws {
        let h = try Harness(CentralsConfig(maximum: 1), owners: [Self.phone, Self.tablet])
        await h.centrals.take(.connected(Self.tablet, adapter: "hci0"))

        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))

        #expect(h.mock.calls.disconnected.map(\.central) == [Self.phone])
    }

    @Test("a central that does nothing for idle_disconnect_seconds is disconnected, on the injected clock; one that wrote meanwhile is not")
    func idleDisconnected() async throws {
        let h = try Harness(CentralsConfig(idleDisconnect: .seconds(60)))
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.take(.connected(Self.stranger, adapter: "hci0"))
        h.clock.advance(by: .seconds(30))
        await h.centrals.take(.active(Self.phone, mtu: nil))
        await h.clock.waitForSleepers(1)

        h.clock.advance(by: .seconds(30))
        try await eventually("the idle one is disconnected") { !h.mock.calls.disconnected.isEmpty }

        #expect(h.mock.calls.disconnected.map(\.central) == [Self.stranger])
        #expect(h.logs.all.contains("notice: \(Self.stranger): ending its link with hci0 (idle for 60 s, idle_disconnect_seconds 60)"))
    }

    @Test("disconnect ends a connected central's link; an address that is not connected is refused with those that are")
    func disconnectOnRequest() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))

        try await h.centrals.disconnect(Self.phone.lowercased())
        let refusal = await #expect(throws: PeripheralError.self) { try await h.centrals.disconnect(Self.stranger) }

        #expect(h.mock.calls.disconnected.map { "\($0.central) \($0.adapter)" } == ["\(Self.phone) hci0"])
        #expect(refusal?.code == .unknownName)
        #expect(refusal?.message == "\"\(Self.stranger)\" is not connected; connected: \(Self.phone)")
    }

    @Test("a value longer than a central's MTU carries in a notification is said once per central and characteristic, and centrals lists it")
    func notificationCutSaid() async throws {
        let h = try Harness()
        let label = GATTCharacteristicID(service: "lamp", characteristic: "label")
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.take(.active(Self.phone, mtu: 23))

        await h.centrals.sent(Self.level, length: 20)
        await h.centrals.sent(label, length: 40)
        await h.centrals.sent(label, length: 41)

        #expect(await h.centrals.centrals().first?.cut == ["lamp.label"])
        #expect(h.logs.all.filter { $0.contains("cut to") } == [
            "notice: lamp.label: a notification of its 40-byte value reaches \(Self.phone) cut to 20 bytes, if it subscribed (its link's ATT MTU is 23, and BlueZ sends what that carries); a read gets it whole",
        ])
    }

    @Test("a central whose MTU shows after a long value was sent is told of it then")
    func cutSaidWhenTheMTUShows() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.sent(Self.level, length: 100)

        await h.centrals.take(.active(Self.phone, mtu: 65))

        #expect(await h.centrals.centrals().first?.cut == ["power.level"])
    }

    @Test("a link's MTU is announced once BlueZ gives it, not again while it stays, and again with each notification it cuts")
    func mtuAndCutsAnnounced() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))

        await h.centrals.take(.active(Self.phone, mtu: 23))
        await h.centrals.take(.active(Self.phone, mtu: 23))
        await h.centrals.sent(Self.level, length: 10)
        await h.centrals.sent(Self.level, length: 30)
        await h.centrals.sent(Self.level, length: 31)

        #expect(h.port.all == [
            "Connected \(Self.phone) hci0", "LinkChanged \(Self.phone) hci0 23 []", "LinkChanged \(Self.phone) hci0 23 [power.level]",
        ])
    }

    @Test("a subscription while one central is connected is announced and listed as that central's, until none is subscribed")
    func subscriptionOfTheOnlyCentral() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))

        await h.centrals.take(.subscription(Self.level, on: true, central: "", mtu: nil))
        let listed = await h.centrals.centrals().first?.subscribed
        await h.centrals.take(.subscription(Self.level, on: false, central: "", mtu: nil))

        #expect(listed == ["power.level"])
        #expect(await h.centrals.centrals().first?.subscribed == [])
        #expect(h.port.all == ["Connected \(Self.phone) hci0", "Subscription power.level true", "Subscription power.level false"])
        #expect(h.logs.all.contains("info: power.level: \(Self.phone) subscribed"))
    }

    @Test("a subscription while two centrals are connected is announced and listed as neither's: BlueZ does not say which subscribed")
    func subscriptionOfOneOfTwo() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.take(.connected(Self.tablet, adapter: "hci0"))

        await h.centrals.take(.subscription(Self.level, on: true, central: "", mtu: nil))

        #expect(await h.centrals.centrals().map(\.subscribed) == [[], []])
        #expect(h.port.all.last == "Subscription power.level true")
        #expect(h.logs.all.contains("info: power.level: a central subscribed (BlueZ does not say which; 2 connected)"))
    }

    @Test("BlueZ's StartNotify and StopNotify reach the component in turn as subscriptions")
    func subscriptionsDelivered() throws {
        let h = try Harness()
        let on = PeripheralEvent.gatt(GATTEvent(Self.level, .subscribed, central: ""))
        let off = PeripheralEvent.gatt(GATTEvent(Self.level, .unsubscribed, central: ""))

        guard case .inTurn(.subscription(Self.level, on: true, central: "", mtu: nil)) = h.centrals.delivery(of: on),
              case .inTurn(.subscription(Self.level, on: false, central: "", mtu: nil)) = h.centrals.delivery(of: off) else {
            Issue.record("a subscription is not delivered as one")
            return
        }
    }

    @Test("a subscription BlueZ names is that central's, with its MTU, while two are connected")
    func namedSubscriptionOfOneOfTwo() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.take(.connected(Self.tablet, adapter: "hci0"))

        await h.centrals.take(.subscription(Self.level, on: true, central: Self.tablet, mtu: 185))

        let listed = await h.centrals.centrals().sorted { $0.address < $1.address }
        #expect(listed.map(\.subscribed) == [[], ["power.level"]])
        #expect(listed.map(\.mtu) == [nil, 185])
        #expect(h.port.all.contains("Subscription power.level true \(Self.tablet)"))
    }

    @Test("a named central's subscription ending leaves the other central's")
    func namedSubscriptionEnds() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.take(.connected(Self.tablet, adapter: "hci0"))
        await h.centrals.take(.subscription(Self.level, on: true, central: Self.phone, mtu: 23))
        await h.centrals.take(.subscription(Self.level, on: true, central: Self.tablet, mtu: 23))

        await h.centrals.take(.subscription(Self.level, on: false, central: Self.phone, mtu: nil))

        #expect(await h.centrals.centrals().sorted { $0.address < $1.address }.map(\.subscribed) == [[], ["power.level"]])
        #expect(h.port.all.last == "Subscription power.level false \(Self.phone)")
    }

    @Test("the notifications a central's full socket dropped are listed with it")
    func droppedNotificationsListed() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))
        await h.centrals.take(.connected(Self.tablet, adapter: "hci0"))

        h.mock.scriptNotificationsDropped([Self.tablet: 42])

        #expect(await h.centrals.centrals().sorted { $0.address < $1.address }.map(\.dropped) == [0, 42])
    }

    @Test("a subscription BlueZ names reaches the component in turn with its central and MTU")
    func namedSubscriptionDelivered() throws {
        let h = try Harness()
        let on = PeripheralEvent.gatt(GATTEvent(Self.level, .subscribed, central: Self.phone, mtu: 247))

        guard case .inTurn(.subscription(Self.level, on: true, central: Self.phone, mtu: 247)) = h.centrals.delivery(of: on) else {
            Issue.record("a named subscription is not delivered with its central")
            return
        }
    }

    @Test("bluetoothd leaving ends every link, each announced")
    func bluezGoneEndsLinks() async throws {
        let h = try Harness()
        await h.centrals.take(.connected(Self.phone, adapter: "hci0"))

        await h.centrals.take(.allEnded(adapter: nil))

        #expect(await h.centrals.centrals().isEmpty)
        #expect(h.port.all.last == "Disconnected \(Self.phone) hci0 ")
    }

    @Test("a flood of a central's writes is taken at once, not queued: the router hands it over as it comes")
    func activityTakenAtOnce() {
        let h = try? Harness()
        let event = PeripheralEvent.gatt(GATTEvent(Self.level, .written([1], .number(1)), central: Self.phone, mtu: 23))

        guard case .now = h?.centrals.delivery(of: event) else {
            Issue.record("a write is queued")
            return
        }
    }
}

/// Centrals in the daemon: BlueZ's link events reach the component and the bus; bleadvctl
/// lists and ends links through a real dbus-daemon.
@Suite("Centrals in the daemon", .timeLimit(.minutes(3)))
struct CentralsDaemonTests {
    static let phone = "AA:BB:CC:DD:EE:01"

    func session(onDBus: Bool = false) async throws -> DaemonSession {
        try await DaemonSession(onDBus: onDBus) { mock in mock.scriptDisconnect(.always(.success(()))) }
    }

    @Test("a link's start and end are broadcast as Connected and Disconnected")
    func linksBroadcast() async throws {
        let session = try await session()
        var lines = try session.following(ControlAPI.Connected.self)
        var ended = try session.following(ControlAPI.Disconnected.self)

        session.mock.emit(.connected(central: Self.phone, adapter: "hci0"))
        let connected = await lines.next()
        session.mock.emit(.disconnected(central: Self.phone, adapter: "hci0"))

        #expect(connected == ControlAPI.Connected(central: Self.phone, adapter: "hci0"))
        #expect(await ended.next() == ControlAPI.Disconnected(central: Self.phone, adapter: "hci0", reason: ""))
    }

    static let label = GATTCharacteristicID(service: "lamp", characteristic: "label")

    /// A session whose config adds a lamp service with a label that notifies.
    func lampSession(onDBus: Bool = false) async throws -> DaemonSession {
        let config = DaemonSession.config + """

            [service.lamp]
            uuid = "6e400001-b5a3-f393-e0a9-e50e24dcca9e"

            [service.lamp.characteristic.label]
            uuid = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"
            format = "utf8"
            flags = ["read", "notify"]
            value = "desk"

            """
        return try await DaemonSession(onDBus: onDBus, config: config) { mock in
            mock.scriptRegisterApplication(.always(.success(RegistrationID("/org/bleadvd/gatt/app1"))))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptUpdateValue(.always(.success(())))
        }
    }

    @Test("a value set longer than a connected central's MTU carries is said for it: Values tells the centrals what it sends")
    func setValueCutSaid() async throws {
        let session = try await lampSession()
        let label = Self.label
        session.mock.emit(.connected(central: Self.phone, adapter: "hci0"))
        session.mock.emit(.gatt(GATTEvent(label, .read, central: Self.phone, mtu: 23)))
        let centrals = try session.serving((any CentralsControl).self)
        try await eventually("the central's MTU is known") { await centrals.centrals().first?.mtu == 23 }

        try await session.daemon.advertising.set("lamp", ["label": .string(String(repeating: "x", count: 30))])

        try await eventually("the cut is said") { await centrals.centrals().first?.cut == ["lamp.label"] }
        #expect(session.logs.all.contains { $0.contains("lamp.label: a notification of its 30-byte value reaches \(Self.phone) cut to 20 bytes") })
    }

    @Test("bleadvctl watch prints a central's MTU once BlueZ gives it, and status a service's notification it cuts")
    func watchAndStatusShowMTU() async throws {
        let session = try await lampSession(onDBus: true)
        let label = Self.label
        let watch = try Child(product("bleadvctl"), ["watch"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address])
        defer { watch.kill(SIGTERM) }
        session.mock.emit(.connected(central: Self.phone, adapter: "hci0"))
        // A first read with each MTU until watch prints one: it may not have subscribed yet.
        let reading = Task {
            var mtu = 23
            while !Task.isCancelled {
                session.mock.emit(.gatt(GATTEvent(label, .read, central: Self.phone, mtu: mtu)))
                mtu += 1
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        defer { reading.cancel() }

        var line = try await PrivateBus.line(from: watch.stdout)
        while line.hasPrefix("connected") { line = try await PrivateBus.line(from: watch.stdout) }
        reading.cancel()
        try await session.daemon.advertising.set("lamp", ["label": .string(String(repeating: "x", count: 300))])
        try await eventually("the cut is known") { try await session.ctl("centrals").output.contains("cut lamp.label") }
        let status = try await session.ctl("status").output

        #expect(line.wholeMatch(of: /link AA:BB:CC:DD:EE:01 hci0 mtu \d+/) != nil, "\(line)")
        #expect(status.contains("(label's notifications reach \(Self.phone) cut to"), "\(status)")
    }

    @Test("bleadvctl watch prints a subscription and its end, and centrals lists it with the only central connected")
    func watchPrintsSubscriptions() async throws {
        let session = try await lampSession(onDBus: true)
        let watch = try Child(product("bleadvctl"), ["watch"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address])
        defer { watch.kill(SIGTERM) }
        // A link's end and start until watch prints one: it may not have subscribed yet.
        let linking = Task {
            while !Task.isCancelled {
                session.mock.emit(.disconnected(central: Self.phone, adapter: "hci0"))
                session.mock.emit(.connected(central: Self.phone, adapter: "hci0"))
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        _ = try await PrivateBus.line(from: watch.stdout)
        linking.cancel()
        await linking.value

        session.mock.emit(.gatt(GATTEvent(Self.label, .subscribed, central: "")))
        try await eventually("the subscription is listed") { try await session.ctl("centrals").output.contains("subscribed lamp.label") }
        let json = try await session.ctl("centrals", "--json").output
        session.mock.emit(.gatt(GATTEvent(Self.label, .unsubscribed, central: "")))
        var lines: [String] = []
        while lines.last != "unsubscribed lamp.label" {
            let next = try await PrivateBus.line(from: watch.stdout)
            if !next.hasPrefix("connected"), !next.hasPrefix("disconnected") { lines.append(next) }
        }

        #expect(lines == ["subscribed lamp.label", "unsubscribed lamp.label"])
        #expect(json.contains("\"subscribed\": [\"lamp.label\"]"), "\(json)")
    }

    @Test("bleadvctl centrals lists a connected central; disconnect ends its link, and exits 2 for one not connected")
    func bleadvctlCentralsAndDisconnect() async throws {
        let session = try await session(onDBus: true)
        session.mock.emit(.connected(central: Self.phone, adapter: "hci0"))
        try await eventually("the central is listed") { try await session.ctl("centrals").output.hasPrefix(Self.phone) }

        let listed = try await session.ctl("centrals").output
        let json = try await session.ctl("centrals", "--json").output
        let ended = try await session.ctl("disconnect", Self.phone)
        let unknown = try await session.ctl("disconnect", "66:66:66:66:66:66")

        #expect(listed.hasPrefix("\(Self.phone) hci0 connected 0s not-bonded mtu - idle 0s"))
        #expect(json.hasPrefix("[{\"central\": \"\(Self.phone)\", \"adapter\": \"hci0\""))
        #expect(ended.status == 0)
        #expect(session.mock.calls.disconnected.map(\.central) == [Self.phone])
        #expect(unknown.status == 2, "\(unknown.errors)")
        #expect(unknown.errors.contains("is not connected"))
    }
}
