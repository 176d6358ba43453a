@testable import AdvertiserDaemon
import AdvertiserConfig
import AdvertiserControl
import DBus
import Events
import Logging
import Peripheral
import PeripheralMocks
import Synchronization
import TestSupport
import AdvertiserDaemonTesting
import Testing

/// The daemon's own logic in process, through its bus port (``ControlBus``) on the in-memory bus
/// (``EmbeddedBus``), which records the signals and answers for callers: the mock, the manual
/// clock, no dbus-daemon. What the control API does over D-Bus is the bus tests' (ControlTests,
/// SetTests, ServiceTests and the rest), which run the same daemon on a private dbus-daemon.
@Suite("The daemon in process", .timeLimit(.minutes(3)))
struct DaemonInProcessTests {
    /// A daemon on the in-memory bus running `text`, the mock scripted for GATT and pairing as
    /// well; `users` says who each caller is, `refusal` why the name cannot be taken.
    static func session(_ text: String, users: [String: UInt32] = [:], refusal: DaemonFailure? = nil) async throws -> DaemonSession {
        try await DaemonSession(config: text, users: users, refusal: refusal, waitForReady: false, script: { mock in
            mock.scriptUpdate(.always(.success(())))
            mock.scriptRegisterApplication(.always(.success(RegistrationID("/org/bleadvd/gatt/app1"))))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptUpdateValue(.always(.success(())))
            mock.scriptAgent()
        }, trusts: { $0 == 0 })
    }

    /// Values' config with Improv, which any central may use.
    static let improvConfig = ValuesComponentTests.config + "\n[improv]\nauthorization = \"none\"\n"

    /// A daemon on `text` whose module has the turn with BlueZ and keeps it: kitchen's
    /// unregistration, which bluetoothd never answers (until the task returned is cancelled).
    /// `first` runs once kitchen is on air, before the turn is taken.
    static func holdingTheTurn(_ text: String, first: (DaemonSession) async throws -> Void = { _ in }) async throws -> (DaemonSession, Task<Void, any Error>) {
        let h = try await session(text)
        try await eventually("kitchen is announced on") { h.sent(ControlAPI.StateChanged.self).contains(.init(name: "kitchen", state: "on")) }
        try await first(h)
        h.mock.scriptStop(.hangs)
        let off = Task { try await h.daemon.advertising.off(["kitchen"]) }
        try await eventually("kitchen is being unregistered", every: .milliseconds(1)) { h.mock.stopAdvertisingCallCount > 0 }
        return (h, off)
    }

    @Test("a state that moves is announced as StateChanged once, on the bus port")
    func stateChangesAnnouncedOnce() async throws {
        try await withRunningDaemon(await Self.session(DaemonSession.config)) { h in
            try await eventually("heart is announced on") { h.sent(ControlAPI.StateChanged.self).contains(.init(name: "heart", state: "on")) }

            try await h.daemon.advertising.on(["door"])
            try await eventually("door is announced on") { h.sent(ControlAPI.StateChanged.self).contains(.init(name: "door", state: "on")) }
            try await h.daemon.advertising.on(["door"])

            #expect(h.sent(ControlAPI.StateChanged.self).filter { $0 == .init(name: "door", state: "on") }.count == 1)
        }
    }

    @Test("a central's write to Improv's command goes to Improv, never out as Written; a write to another characteristic is announced (its value not shown: it is secured)")
    func improvWritesAreRouted() async throws {
        try await withRunningDaemon(await Self.session(ValuesComponentTests.config + "\n[improv]\nauthorization = \"none\"\n")) { h in
            try await eventually("Improv is on air") { h.sent(ControlAPI.StateChanged.self).contains(.init(name: "improv", state: "on")) }

            h.mock.emit(.gatt(GATTEvent(ImprovProvisioner<ManualClock>.command, .written(ImprovDaemonTests.wifi, .bytes(ImprovDaemonTests.wifi)), central: "AA:BB:CC:DD:EE:01")))
            h.mock.emit(.gatt(GATTEvent(ValuesComponentTests.level, .written([7], .number(7)), central: "AA:BB:CC:DD:EE:01")))
            try await eventually("the level's write is announced") { h.sent(ControlAPI.Written.self, to: .everyone).contains { $0.shown == "dial.level (not shown)" } }

            #expect(!h.sent(ControlAPI.Written.self).contains { $0.service == "improv" })
            #expect(h.mock.calls.updatedValues.contains { $0.characteristic == GATTCharacteristicID(service: "improv", characteristic: "error") })
        }
    }

    @Test("a central's write is in force and announced while the module waits on BlueZ, even behind a link's event for the module")
    func writesDoNotWaitForTheModulesTurn() async throws {
        let (h, off) = try await Self.holdingTheTurn(ValuesComponentTests.config)
        defer { off.cancel(); h.stop() }

        h.mock.emit(.connected(central: "AA:BB:CC:DD:EE:01", adapter: "hci0"))
        h.mock.emit(.gatt(GATTEvent(ValuesComponentTests.level, .written([7], .number(7)), central: "AA:BB:CC:DD:EE:01")))

        try await eventually("the write is announced") { h.sent(ControlAPI.Written.self, to: .everyone).contains { $0.shown == "dial.level (not shown)" } }
        #expect(await h.daemon.advertising.status()["dial"]?.values["level"] == "7")
    }

    @Test("a central's Improv frame, answered through the module, does not hold up another central's write while the module waits on BlueZ")
    func improvFramesDoNotHoldUpWrites() async throws {
        let (h, off) = try await Self.holdingTheTurn(Self.improvConfig)
        defer { off.cancel(); h.stop() }

        h.mock.emit(.gatt(GATTEvent(ImprovProvisioner<ManualClock>.command, .written(ImprovDaemonTests.wifi, .bytes(ImprovDaemonTests.wifi)), central: "AA:BB:CC:DD:EE:01")))
        h.mock.emit(.gatt(GATTEvent(ValuesComponentTests.level, .written([7], .number(7)), central: "AA:BB:CC:DD:EE:02")))

        try await eventually("the other central's write is announced") { h.sent(ControlAPI.Written.self, to: .everyone).contains { $0.shown == "dial.level (not shown)" } }
    }

    @Test("a central's bond, which closes the pairing window through the module, does not hold up another central's write while the module waits on BlueZ")
    func bondsDoNotHoldUpWrites() async throws {
        let (h, off) = try await Self.holdingTheTurn(ValuesComponentTests.config) { h in
            _ = try await h.daemon.component(Pairing<ManualClock>.self)!.pair(for: 60, by: ":1.7")
            #expect(await h.mock.agentRequest(PairingRequest(central: "AA:BB:CC:DD:EE:01", .passkey(123_456))) == true)
        }
        defer { off.cancel(); h.stop() }

        h.mock.emit(.paired(central: "AA:BB:CC:DD:EE:01", adapter: "hci0"))
        h.mock.emit(.gatt(GATTEvent(ValuesComponentTests.level, .written([7], .number(7)), central: "AA:BB:CC:DD:EE:02")))

        try await eventually("the other central's write is announced") { h.sent(ControlAPI.Written.self, to: .everyone).contains { $0.shown == "dial.level (not shown)" } }
        #expect(h.logs.all.contains { $0.contains("pairing: AA:BB:CC:DD:EE:01 paired and bonded") })
    }

    @Test("while the module waits on BlueZ, Improv's frames beyond its backlog are dropped, said once in the journal")
    func improvBacklogIsBounded() async throws {
        let (h, off) = try await Self.holdingTheTurn(Self.improvConfig)
        defer { off.cancel(); h.stop() }
        let frame = GATTEvent(ImprovProvisioner<ManualClock>.command, .written(ImprovDaemonTests.wifi, .bytes(ImprovDaemonTests.wifi)), central: "AA:BB:CC:DD:EE:01")

        for _ in 0..<(ImprovProvisioner<ManualClock>.queueLimit + 10) { h.mock.emit(.gatt(frame)) }
        h.mock.emit(.gatt(GATTEvent(ValuesComponentTests.level, .written([7], .number(7)), central: "AA:BB:CC:DD:EE:02")))

        try await eventually("the other central's write is announced") { h.sent(ControlAPI.Written.self, to: .everyone).contains { $0.shown == "dial.level (not shown)" } }
        #expect(h.logs.all.filter { $0.contains("improv: dropped a write of AA:BB:CC:DD:EE:01's") }.count == 1)
    }

    @Test("values set go to everyone without the secured ones, and whole to a trusted subscriber alone")
    func securedValuesGoToSubscribersAlone() async throws {
        try await withRunningDaemon(await Self.session(SecuredValuesTests.config, users: [":1.7": 0, ":1.8": 1000])) { h in
            try await eventually("the application is registered") { !h.mock.calls.registeredApplications.isEmpty }
            try await h.daemon.advertising.subscribe(":1.7")
            let stranger = await #expect(throws: PeripheralError.self) { try await h.daemon.advertising.subscribe(":1.8") }

            try await h.daemon.advertising.set("lamp", ["label": .string("hall"), "mode": .string("cold")])
            try await eventually("the values are announced") { h.sent(ControlAPI.ValuesChanged.self, to: .subscriber(":1.7")).contains { $0.name == "lamp" } }

            #expect(stranger?.code == .accessDenied)
            #expect(h.sent(ControlAPI.ValuesChanged.self, to: .subscriber(":1.7")).contains { $0.name == "lamp" && $0.values["label"] == "hall" })
            #expect(h.sent(ControlAPI.ValuesChanged.self, to: .everyone).contains { $0.name == "lamp" && $0.values["mode"] == "cold" && $0.values["label"] == nil })
        }
    }

    @Test("the bus lost ends the daemon's run with a failure that says so")
    func busLostEndsTheRun() async throws {
        let h = try await Self.session(DaemonSession.config)
        try await eventually("heart is announced on") { h.sent(ControlAPI.StateChanged.self).contains(.init(name: "heart", state: "on")) }

        h.embedded?.lose()
        let failure = await #expect(throws: DaemonFailure.self) { try await h.running.value }

        #expect(failure?.description.contains("lost the system bus") == true)
    }

    @Test("a name the bus refuses ends the run before anything is registered")
    func refusedNameRegistersNothing() async throws {
        let h = try await Self.session(DaemonSession.config, refusal: DaemonFailure("another bleadvd is running"))

        let failure = await #expect(throws: DaemonFailure.self) { try await h.running.value }

        #expect(failure?.description == "another bleadvd is running")
        #expect(h.mock.calls.started.isEmpty)
    }
}
