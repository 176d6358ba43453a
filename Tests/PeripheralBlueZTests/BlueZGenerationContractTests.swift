import DBus
import Foundation
import Peripheral
import PeripheralBlueZ
import TestSupport
import Testing

/// One bluetoothd at a time: calls reach only the bluetoothd the events announced, and what a
/// bluetoothd held goes with it, whatever the order in which replies and the bus's
/// `NameOwnerChanged` arrive. The test bed's record of the bug these prevent (an advertisement
/// registered twice after `systemctl restart bluetooth`) is in docs/RELIABILITY.md.
@Suite("BlueZPeripheralManager and the runs of bluetoothd")
struct BlueZGenerationContractTests {
    /// A bus that starts a stand-in when a call for org.bluez finds no owner, as the system bus
    /// does under systemd (org.bluez.service names bluetooth.service); the marker file tells
    /// whether it did.
    static func activatingSession() async throws -> (session: StandInSession, marker: URL) {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("bluez-activated-\(UUID().uuidString)")
        let bus = try await PrivateBus(activatable: ["org.bluez": BlueZStandIn.activation(adapters: ["hci0"], marker: marker)])
        return (try await StandInSession(bus: bus), marker)
    }

    @Test("a call while bluetoothd is gone fails at once: the bus is never asked to start another")
    func aCallWhileBluetoothdIsGoneFailsAtOnce() async throws {
        let (session, marker) = try await Self.activatingSession()
        defer { try? FileManager.default.removeItem(at: marker) }
        _ = try await session.manager.events()
        session.standIn.crash()
        try await eventually("the stand-in has left the bus") { try await session.connection.nameOwner(BlueZ.service) == nil }

        let error = await #expect(throws: PeripheralError.self) { try await session.manager.adapters() }

        #expect(error?.code == .bluezUnavailable)
        #expect(!FileManager.default.fileExists(atPath: marker.path))
        #expect(try await session.connection.nameOwner(BlueZ.service) == nil)
    }

    @Test("a registration asked while bluetoothd is gone reaches no bluetoothd and leaves no object")
    func aRegistrationWhileBluetoothdIsGoneReachesNone() async throws {
        let (session, marker) = try await Self.activatingSession()
        defer { try? FileManager.default.removeItem(at: marker) }
        _ = try await session.manager.events()
        session.standIn.crash()
        try await eventually("the stand-in has left the bus") { try await session.connection.nameOwner(BlueZ.service) == nil }

        let error = await #expect(throws: PeripheralError.self) {
            try await session.manager.register(.advertisement(BlueZContractTests.thermometer), on: "hci0")
        }

        #expect(error?.code == .bluezUnavailable)
        #expect(!FileManager.default.fileExists(atPath: marker.path))
        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("every call goes to bluetoothd by its unique name, without bus activation")
    func callsGoToTheUniqueNameWithoutActivation() async throws {
        let session = try await StandInSession()
        let monitor = try await BusRecord.start(on: session.bus)

        let id = try await session.manager.register(.advertisement(BlueZContractTests.thermometer), on: "hci0")

        let calls = try await monitor.calls(from: session.connection.uniqueName)
        let toBlueZ = calls.filter { $0.destination != "org.freedesktop.DBus" && $0.member != "Calls" }
        #expect(toBlueZ.map(\.member).contains("RegisterAdvertisement"))
        #expect(toBlueZ.allSatisfy { $0.destination == session.standIn.uniqueName && !$0.autoStart })
        #expect(id.generation.name == session.standIn.uniqueName)
    }

    @Test("a registration answered after bluetoothd gave up org.bluez is not kept")
    func aReplyAfterTheOwnerChangedIsNotKept() async throws {
        let session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        try await session.control("LeaveBeforeNextReply")

        let outcome: Result<RegistrationID, any Error>
        do {
            outcome = .success(try await session.manager.register(.advertisement(BlueZContractTests.thermometer), on: "hci0"))
        } catch {
            outcome = .failure(error)
        }
        let vanished = try await events.next()

        guard case .bluezVanished(let generation) = vanished else {
            Issue.record("expected bluezVanished, got \(vanished)")
            return
        }
        // Whichever the manager saw first, the reply or the owner's change, it holds nothing.
        switch outcome {
        case .success(let id): #expect(id.generation == generation)
        case .failure(let error): #expect((error as? PeripheralError)?.code == .bluezUnavailable)
        }
        #expect(await session.connection.exportedPaths.isEmpty)
        #expect(try await session.controlByName("Calls")[0].stringArray?.last == "released org.bluez before replying")
    }

    @Test("a registration whose caller gave up is withdrawn: BlueZ does not keep one nobody tracks")
    func aRegistrationWhoseCallerGaveUpIsWithdrawn() async throws {
        let session = try await StandInSession()
        try await session.control("SilenceNextRegistration")
        let registering = Task { try await session.manager.register(.advertisement(BlueZContractTests.thermometer), on: "hci0") }
        try await eventually("the stand-in holds an advertisement") { try await !session.advertisements().isEmpty }

        registering.cancel()
        let outcome = await registering.result

        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(try await session.advertisements().isEmpty)
        #expect(await session.connection.exportedPaths.isEmpty)
        #expect(try await session.calls().contains { $0.hasPrefix("UnregisterAdvertisement /org/bleadvd/advertisement/") })
    }

    @Test("a vanished bluetoothd takes its registrations; the next one's stay until it goes")
    func aVanishTakesExactlyItsOwnGeneration() async throws {
        var session = try await StandInSession()
        let events = await EventLog.reading(try await session.manager.events())
        let first = try await session.manager.register(.advertisement(BlueZContractTests.thermometer), on: "hci0")
        session.standIn.crash()
        session.standIn = try await BlueZStandIn(bus: session.bus)
        _ = try await events.next(2)

        let second = try await session.manager.register(.advertisement(BlueZContractTests.thermometer), on: "hci0")

        #expect(second.generation > first.generation)
        #expect(await session.connection.exportedPaths == [try DBusObjectPath(second.rawValue)])
        await #expect(throws: PeripheralError.self) { try await session.manager.unregister(first) }
        try await session.manager.unregister(second)
        #expect(try await session.advertisements().isEmpty)
    }
}

/// The self-check's side in the manager: what BlueZ counts against what it holds.
@Suite("BlueZPeripheralManager's audit")
struct BlueZAuditContractTests {
    @Test("the audit reports each adapter's ActiveInstances and the registrations held there")
    func theAuditReportsActiveInstancesAndHeld() async throws {
        let session = try await StandInSession(adapters: ["hci0", "hci1"])
        let id = try await session.manager.register(.advertisement(BlueZContractTests.thermometer), on: "hci0")

        let audits = try await session.manager.audit()

        #expect(audits == [
            RegistrationAudit(adapter: "hci0", registered: 1, held: [id]),
            RegistrationAudit(adapter: "hci1", registered: 0, held: []),
        ])
    }

    @Test("a registration whose unregistering got no answer is unregistered by the next audit")
    func anUnansweredUnregistrationIsRepairedByTheAudit() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(BlueZContractTests.thermometer), on: "hci0")
        try await session.control("IgnoreNextUnregistration")
        let stopping = Task { try await session.manager.unregister(id) }
        try await eventually("the stand-in ignored an UnregisterAdvertisement") { try await session.calls().contains("ignored UnregisterAdvertisement \(id.rawValue)") }
        stopping.cancel()
        _ = await stopping.result
        let strayBefore = try await session.advertisements().keys.sorted()

        let audits = try await session.manager.audit()

        #expect(strayBefore == [id.rawValue])
        #expect(audits == [RegistrationAudit(adapter: "hci0", registered: 0, held: [], straysRemoved: 1)])
        #expect(try await session.advertisements().isEmpty)
        #expect(await session.connection.exportedPaths.isEmpty)
    }

    @Test("unregistering that bluetoothd left without answering is done: what it held went with it")
    func anUnregistrationBluetoothdLeftUnansweredIsDone() async throws {
        let session = try await StandInSession()
        let id = try await session.manager.register(.advertisement(BlueZContractTests.thermometer), on: "hci0")
        try await session.control("IgnoreNextUnregistration")
        let stopping = Task { try await session.manager.unregister(id) }
        try await eventually("the stand-in ignored an UnregisterAdvertisement") { try await session.calls().contains("ignored UnregisterAdvertisement \(id.rawValue)") }

        session.standIn.crash()

        await #expect(throws: Never.self) { try await stopping.value }
        #expect(await session.connection.exportedPaths.isEmpty)
    }
}

