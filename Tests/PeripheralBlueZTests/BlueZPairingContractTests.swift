import DBus
import Peripheral
import PeripheralBlueZ
import PeripheralMocks
import TestSupport
import Testing

extension RecordingDecider {
    /// The requests, once `count` came (bluetoothd's DisplayPasskey is sent with no reply).
    func requests(_ count: Int) async throws -> [PairingRequest] {
        try await eventually("\(count) pairing request(s) came") { asked.count >= count }
        return asked
    }
}

/// The pairing half of the contract with BlueZ, against the stand-in (AgentManager1 as agent.c
/// answers, the agent asked as a central's pairing makes bluetoothd ask). testbed/scenarios/
/// 62-pairing.sh does the same with the real bluetoothd and a central on a stack of its own.
@Suite("BlueZPeripheralManager's pairing agent against a BlueZ stand-in")
struct BlueZPairingContractTests {
    static let phone = "00:AA:02:00:00:01"
    static let device = "/org/bluez/hci0/dev_00_AA_02_00_00_01"
    static let other = "00:AA:02:00:00:02"

    @Test("the agent is registered with the capability of its method, and made the default", arguments: [
        (PairingMethod.justWorks, "NoInputNoOutput"), (.passkey, "DisplayOnly"), (.numericComparison, "DisplayYesNo"),
    ])
    func registerAgent(method: PairingMethod, capability: String) async throws {
        let session = try await StandInSession()

        let id = try await session.manager.register(.agent(method, decider: RecordingDecider(true)), on: "hci0")

        #expect(id.rawValue == "/org/bleadvd/agent")
        #expect(try await session.calls() == ["RegisterAgent /org/bleadvd/agent \(capability)", "RequestDefaultAgent /org/bleadvd/agent"])
        #expect(try await session.control("Agents")[0] == .array(.structure([.string, .string]), [.structure([.string("/org/bleadvd/agent"), .string(capability)])]))
    }

    @Test("registering again for the same method keeps the agent: one registration")
    func registerTwice() async throws {
        let session = try await StandInSession()
        let first = try await session.manager.register(.agent(.justWorks, decider: RecordingDecider(true)), on: "hci0")

        let second = try await session.manager.register(.agent(.justWorks, decider: RecordingDecider(true)), on: "hci0")

        #expect(first == second)
        #expect(try await session.calls().filter { $0.hasPrefix("RegisterAgent") }.count == 1)
    }

    @Test("bluetoothd's RequestAuthorization asks the decider about the central; yes lets it pair")
    func authorizationAllowed() async throws {
        let session = try await StandInSession()
        let decider = RecordingDecider(true)
        _ = try await session.manager.register(.agent(.justWorks, decider: decider), on: "hci0")

        let reply = try await session.control("AskAgent", [.string("authorize"), .string(Self.device), .uint32(0)])

        #expect(reply == [.string("")])
        #expect(decider.asked == [PairingRequest(central: Self.phone, .authorize)])
    }

    @Test("a refusal is org.bluez.Error.Rejected, which bluetoothd turns into a failed pairing")
    func authorizationRefused() async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.agent(.justWorks, decider: RecordingDecider(false)), on: "hci0")

        let reply = try await session.control("AskAgent", [.string("authorize"), .string(Self.device), .uint32(0)])

        #expect(reply == [.string("org.bluez.Error.Rejected")])
    }

    @Test("DisplayPasskey, sent with no reply expected, gives the decider the code")
    func passkeyShown() async throws {
        let session = try await StandInSession()
        let decider = RecordingDecider(true)
        _ = try await session.manager.register(.agent(.passkey, decider: decider), on: "hci0")

        try await session.control("AskAgent", [.string("passkey"), .string(Self.device), .uint32(4_213)])

        #expect(try await decider.requests(1) == [PairingRequest(central: Self.phone, .passkey(4_213))])
    }

    @Test("RequestConfirmation gives the decider the code to compare; its answer is the reply")
    func confirmation() async throws {
        let session = try await StandInSession()
        let decider = RecordingDecider(false)
        _ = try await session.manager.register(.agent(.numericComparison, decider: decider), on: "hci0")

        let reply = try await session.control("AskAgent", [.string("confirm"), .string(Self.device), .uint32(654_321)])

        #expect(reply == [.string("org.bluez.Error.Rejected")])
        #expect(decider.asked == [PairingRequest(central: Self.phone, .confirm(654_321))])
    }

    @Test("a request from a process other than bluetoothd is refused, and the decider is not asked")
    func forgedRequestRefused() async throws {
        let session = try await StandInSession()
        let decider = RecordingDecider(true)
        _ = try await session.manager.register(.agent(.justWorks, decider: decider), on: "hci0")
        let name = session.connection.uniqueName

        let forged = await #expect(throws: TestFailure.self) {
            try await busctl(session.bus, ["call", name, "/org/bleadvd/agent", "org.bluez.Agent1", "RequestAuthorization", "o", Self.device])
        }

        #expect(forged?.description.contains("Access denied") == true, "\(forged?.description ?? "")")
        #expect(decider.asked.isEmpty)
    }

    @Test("setPairable sets the adapter's Pairable, which the default agent had turned on")
    func pairable() async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.agent(.justWorks, decider: RecordingDecider(true)), on: "hci0")
        let opened = try await session.control("Pairable", [.string("hci0")])

        try await session.manager.setPairable(false, adapter: "hci0")

        #expect(opened == [.boolean(true)])
        #expect(try await session.control("Pairable", [.string("hci0")]) == [.boolean(false)])
    }

    @Test("closing the adapter takes the default agent back from another program that took it (any local user may), and leaves the adapter closed")
    func closingReclaimsTheDefaultAgent() async throws {
        let session = try await StandInSession()
        _ = try await session.manager.register(.agent(.justWorks, decider: RecordingDecider(true)), on: "hci0")
        let stranger = try await DBusConnection.connect(to: .address(session.bus.address))
        for (member, arguments) in [("RegisterAgent", [DBusValue.objectPath("/stranger"), .string("NoInputNoOutput")]), ("RequestDefaultAgent", [.objectPath("/stranger")])] {
            _ = try await stranger.call(destination: "org.bluez", path: "/org/bluez", interface: "org.bluez.AgentManager1", member: member, arguments)
        }
        let taken = try await session.control("Agents")[0]

        try await session.manager.setPairable(false, adapter: "hci0")

        #expect(taken.arrayElements?.first == .structure([.string("/stranger"), .string("NoInputNoOutput")]))
        #expect(try await session.control("Agents")[0].arrayElements?.first == .structure([.string("/org/bleadvd/agent"), .string("NoInputNoOutput")]))
        #expect(try await session.control("Pairable", [.string("hci0")]) == [.boolean(false)])
    }

    @Test("unregistering the agent tells bluetoothd, which closes the adapters")
    func unregister() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.agent(.justWorks, decider: RecordingDecider(true)), on: "hci0")

        try await session.manager.unregister(id)

        #expect(try await session.calls().last == "UnregisterAgent /org/bleadvd/agent")
        #expect(try await session.control("Agents")[0].arrayElements?.isEmpty == true)
        #expect(try await session.control("Pairable", [.string("hci0")]) == [.boolean(false)])
    }

    @Test("an agent registered again after unregistering (a new method) keeps its object: bluetoothd's requests reach it")
    func reregisteredAgentAnswers() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.agent(.justWorks, decider: RecordingDecider(true)), on: "hci0")
        try await session.manager.unregister(id)
        let decider = RecordingDecider(true)
        _ = try await session.manager.register(.agent(.passkey, decider: decider), on: "hci0")

        try await session.control("AskAgent", [.string("passkey"), .string(Self.device), .uint32(4_213)])

        #expect(try await decider.requests(1) == [PairingRequest(central: Self.phone, .passkey(4_213))])
    }

    @Test("bonds are the bonded devices under the adapter, with their names; a device only connected is not one")
    func bonds() async throws {
        let session = try await StandInSession()
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string("Pixel 8"), .boolean(true)])
        try await session.control("AddDevice", [.string("hci0"), .string("00:AA:02:00:00:02"), .string(""), .boolean(false)])
        try await session.control("AddDevice", [.string("hci0"), .string("00:AA:02:00:00:03"), .string(""), .boolean(true)])

        let bonds = try await session.manager.bonds(adapter: "hci0")

        #expect(bonds == [Bond(central: Self.phone, name: "Pixel 8"), Bond(central: "00:AA:02:00:00:03")])
    }

    @Test("removing a bond removes the device; a central with none is unknownName")
    func removeBond() async throws {
        let session = try await StandInSession()
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(true)])

        try await session.manager.removeBond(Self.phone.lowercased(), adapter: "hci0")
        let again = await #expect(throws: PeripheralError.self) { try await session.manager.removeBond(Self.phone, adapter: "hci0") }

        #expect(try await session.calls().first == "RemoveDevice \(Self.device)")
        #expect(try await session.manager.bonds(adapter: "hci0").isEmpty)
        #expect(again?.code == .unknownName)
    }

    @Test("a central whose Paired turns true is an event, with its address and adapter")
    func pairedIsAnEvent() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(false)])

        try await session.control("Pair", [.string("hci0"), .string(Self.phone)])

        #expect(try await events.next() == .paired(central: Self.phone, adapter: "hci0"))
    }

    @Test("a bonded central whose device another program removes (any local user may call RemoveDevice) is a bond-ended event: removed")
    func removedDeviceIsABondEnded() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(true)])
        let stranger = try await DBusConnection.connect(to: .address(session.bus.address))

        _ = try await stranger.call(
            destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.Adapter1", member: "RemoveDevice", [.objectPath(try DBusObjectPath(Self.device))])

        #expect(try await events.next() == .bondEnded(central: Self.phone, adapter: "hci0", .removed))
    }

    @Test("a bonded central whose Paired or Bonded turns false is a bond-ended event: unpaired", arguments: [["Paired", "Bonded"], ["Paired"], ["Bonded"]])
    func unpairedIsABondEnded(turningFalse names: [String]) async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(true)])

        try await session.control("Unpair", [.string("hci0"), .string(Self.phone), .array(.string, names.map { .string($0) })])

        #expect(try await events.next() == .bondEnded(central: Self.phone, adapter: "hci0", .unpaired))
    }

    @Test("a bonded central's device object that goes with its adapter (unplugged: BlueZ keeps the bond) ends no bond")
    func deviceGoneWithItsAdapterEndsNoBond() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(true)])

        try await session.control("RemoveAdapter", [.string("hci0")])

        #expect(try await events.next().anyGeneration == .adapterRemoved("hci0"))
    }

    @Test("while bluetoothd does not answer the check of a removed bonded central's device, a link's signals after it are delivered at once")
    func uncheckedRemovalHoldsNoSignal() async throws {
        // The check's timeout is past the wait's guard: the link's event comes before it or not at all.
        let session = try await StandInSession(callTimeout: .seconds(120))
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(true)])
        try await session.control("Hang")
        try await session.removeDevice(Self.phone)

        try await session.control("Connect", [.string("hci0"), .string(Self.other)])

        // The check waits out its 120 s; the link's event must not wait with it.
        #expect(try await events.next() == .connected(central: Self.other, adapter: "hci0"))
    }

    @Test("a removed bonded central whose check gets no answer from the bluetoothd that still owns org.bluez is a bond-ended event: removed")
    func unansweredCheckEndsTheBond() async throws {
        let session = try await StandInSession(callTimeout: .milliseconds(500))
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(true)])
        try await session.control("Hang")

        try await session.removeDevice(Self.phone)

        #expect(try await events.next() == .bondEnded(central: Self.phone, adapter: "hci0", .removed))
    }

    @Test("a removed bonded central whose check is cut short by bluetoothd leaving the bus (a restart removes device objects and keeps bonds) is no bond-ended event")
    func removalBeforeBluetoothdLeavesEndsNoBond() async throws {
        var session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(true)])
        try await session.control("Hang")

        try await session.removeDevice(Self.phone)
        session.standIn.crash()
        session.standIn = try await BlueZStandIn(bus: session.bus)
        // A removal by the new bluetoothd, checked after the first: its event closes the look.
        try await session.control("AddDevice", [.string("hci0"), .string(Self.other), .string(""), .boolean(true)])
        try await session.removeDevice(Self.other)

        var seen: [PeripheralEvent] = []
        repeat { seen.append(try await events.next()) } while seen.last != .bondEnded(central: Self.other, adapter: "hci0", .removed)
        #expect(!seen.contains(.bondEnded(central: Self.phone, adapter: "hci0", .removed)))
        #expect(seen.map(\.anyGeneration).starts(with: [.bluezVanished()]))
    }

    @Test("a central bluetoothd never saw, whose object appears connected, is a connected event")
    func newCentralConnectedIsAnEvent() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())

        try await session.control("Connect", [.string("hci0"), .string(Self.phone)])

        #expect(try await events.next() == .connected(central: Self.phone, adapter: "hci0"))
    }

    @Test("a known central whose Connected turns true is a connected event")
    func knownCentralConnectedIsAnEvent() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(false)])

        try await session.control("Connect", [.string("hci0"), .string(Self.phone)])

        #expect(try await events.next() == .connected(central: Self.phone, adapter: "hci0"))
    }

    @Test("a central whose Connected turns false is a disconnected event, with its address and adapter")
    func disconnectedIsAnEvent() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("AddDevice", [.string("hci0"), .string(Self.phone), .string(""), .boolean(false)])

        try await session.control("Disconnect", [.string("hci0"), .string(Self.phone)])

        #expect(try await events.next() == .disconnected(central: Self.phone, adapter: "hci0"))
    }
}

