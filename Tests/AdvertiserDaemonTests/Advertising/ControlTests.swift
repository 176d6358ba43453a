import AdvertiserControl
import AdvertiserDaemon
import BluetoothModule
import DBus
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// The control API over the mock: the daemon's answers on the in-memory bus, and bleadvctl's
/// output, exit codes and the signals' marshalling on a private dbus-daemon.
@Suite("bleadvctl and the daemon's control API")
struct ControlTests {
    @Test("the daemon starts the enabled advertisements and only those")
    func startsEnabledOnly() async throws {
        let session = try await DaemonSession()

        let started = session.mock.calls.started

        #expect(started.count == 1)
        #expect(started.first?.advertisement.localName == "Thermo-1")
    }

    @Test("on NAME registers it and exits 0 once it is on air")
    func onRegisters() async throws {
        let session = try await DaemonSession(onDBus: true)

        let result = try await session.ctl("on", "door")

        #expect(result.status == 0)
        #expect(result.errors.isEmpty)
        #expect(session.mock.startAdvertisingCallCount == 2)
        #expect(session.mock.calls.started.last?.advertisement.kind == .broadcast)
    }

    @Test("on for an advertisement already on air calls BlueZ no more")
    func onTwiceIsIdempotent() async throws {
        let session = try await DaemonSession()

        try await session.daemon.advertising.on(["heart"])

        #expect(session.mock.startAdvertisingCallCount == 1)
    }

    @Test("off without names takes every advertisement on air off")
    func offAll() async throws {
        let session = try await DaemonSession()

        try await session.daemon.advertising.off([])

        #expect(session.mock.calls.stopped == [RegistrationID("/org/bleadvd/advertisement/1")])
    }

    @Test("an unknown name is a usage error: exit 2 and one line naming it")
    func unknownName() async throws {
        let session = try await DaemonSession(onDBus: true)

        let result = try await session.ctl("on", "kitchen")

        #expect(result.status == 2)
        #expect(result.errors == "bleadvctl: no advertisement named \"kitchen\"\n")
    }

    @Test("when BlueZ refuses, on exits 1 with BlueZ's reason translated")
    func refusedOn() async throws {
        let session = try await DaemonSession(onDBus: true)
        session.mock.scriptStart(.always(.failure(PeripheralError(.noFreeInstance, "the adapter has no free advertising slot"))))

        let result = try await session.ctl("on", "door")

        #expect(result.status == 1)
        #expect(result.errors == "bleadvctl: door: the adapter has no free advertising slot\n")
    }

    @Test("status --json reports each advertisement's state")
    func statusJSON() async throws {
        let session = try await DaemonSession(onDBus: true)

        let result = try await session.ctl("status", "--json")

        #expect(result.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: [String: Any]]
        #expect(json?["heart"]?["state"] as? String == "on")
        #expect(json?["heart"]?["id"] as? String == "/org/bleadvd/advertisement/1")
        #expect(json?["door"]?["state"] as? String == "off")
        #expect(json?["door"]?["desired"] as? Bool == false)
    }

    @Test("status shows a table with a row per advertisement")
    func statusTable() async throws {
        let session = try await DaemonSession(onDBus: true)

        let result = try await session.ctl("status")

        let lines = result.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(lines.map { $0.prefix(4) } == [
            ["NAME", "KIND", "STATE", "WANTED"], ["door", "advertisement", "off", "off"], ["heart", "advertisement", "on", "on"],
        ])
        #expect(result.errors == "")
    }

    @Test("while a call to BlueZ waits, status prints the states all the same and says on stderr since when BlueZ has not answered")
    func statusWhileBlueZIsSilent() async throws {
        let session = try await DaemonSession(onDBus: true)
        let sent = WallClock.now - 3
        session.mock.scriptUnanswered(UnansweredCall(call: "UnregisterAdvertisement", sentAt: sent, waited: .seconds(3)))

        let result = try await session.ctl("status")

        #expect(result.status == 0)
        #expect(result.output.hasPrefix("NAME"))
        #expect(result.errors == "bleadvctl: BlueZ has not answered since \(WallClock.time(of: sent)) (3.0 s): what follows is what bleadvd knew then\n")
    }

    @Test("what the self-check cannot repair is shown by status, in the table and in JSON")
    func statusShowsMismatch() async throws {
        let session = try await DaemonSession(onDBus: true, auditDelay: .seconds(1)) { mock in
            mock.scriptAudit(.always(.success([RegistrationAudit(
                adapter: "hci0", registered: 3, held: [RegistrationID("/org/bleadvd/advertisement/1")])])))
        }
        let expected = "BlueZ holds 3 advertisement(s) on hci0, bleadvd 1: 2 registered by another program, or by bleadvd where it cannot name them"

        await session.clock.waitForSleepers()
        session.clock.advance(by: .seconds(1))
        var json: [String: [String: Any]]?
        try? await eventually("status reports heart's mismatch", every: .milliseconds(50)) {
            let result = try await session.ctl("status", "--json")
            json = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: [String: Any]]
            return json?["heart"]?["mismatch"] != nil
        }
        let table = try await session.ctl("status").output

        #expect(json?["heart"]?["mismatch"] as? String == expected)
        #expect(json?["door"]?["mismatch"] == nil)
        #expect(table.contains("(warning: \(expected))"))
    }

    @Test("list prints the configured names, sorted")
    func list() async throws {
        let session = try await DaemonSession(onDBus: true)

        let result = try await session.ctl("list")

        #expect(result.output == "door\nheart\n")
    }

    @Test("reload reads the changed config and starts a new enabled advertisement")
    func reloadAdds() async throws {
        let session = try await DaemonSession()
        try session.writeConfig(DaemonSession.config + "\n[advertisement.kitchen]\nlocal_name = \"Kitchen\"\n")

        try await session.daemon.reload()

        #expect(await session.daemon.advertising.list() == ["door", "heart", "kitchen"])
        #expect(session.mock.calls.started.last?.advertisement.localName == "Kitchen")
    }

    @Test("a bad config at reload is refused with FILE:LINE: KEY and nothing on air changes")
    func reloadRefused() async throws {
        let session = try await DaemonSession(onDBus: true)
        try session.writeConfig("[advertisement.heart]\nlocal_name = \"Thermo-1\"\ncolour = \"red\"\n")

        let result = try await session.ctl("reload")

        #expect(result.status == 2)
        #expect(result.errors.hasPrefix("bleadvctl: \(session.configPath):3: advertisement.heart.colour: unknown key"))
        #expect(try await session.ctl("list").output == "door\nheart\n")
        #expect(session.mock.stopAdvertisingCallCount == 0)
    }

    @Test("StateChanged announces an advertisement going on air")
    func stateChangedSignal() async throws {
        let session = try await DaemonSession(onDBus: true)
        let listener = try await DBusConnection.connect(to: .address(session.bus.address))
        let signals = try await listener.signals(matching: DBusMatchRule(
            sender: ControlAPI.busName, interface: ControlAPI.interface, member: ControlAPI.StateChanged.name))

        _ = try await session.ctl("on", "door")

        var iterator = signals.makeAsyncIterator()
        #expect(await iterator.next()?.body == [.string("door"), .string("on")])
    }

    @Test("a change of state is announced once, however many callers asked for it")
    func stateChangedOnce() async throws {
        let session = try await DaemonSession()
        var signals = try session.following(ControlAPI.StateChanged.self) { $0.name == "door" }

        async let first: Void = session.daemon.advertising.on(["door"])
        async let second: Void = session.daemon.advertising.on(["door"])
        _ = try await (first, second)
        let announced = await signals.next()
        try await session.daemon.advertising.off(["door"])
        let next = await signals.next()

        #expect(announced?.state == "on")
        #expect(next?.state == "off")
    }

    @Test("status names the adapter an advertisement is on and its address (which stays with the controller when its name changes)")
    func statusShowsTheAdapter() async throws {
        let session = try await DaemonSession(onDBus: true)

        let table = try await session.ctl("status")
        let json = try await session.ctl("status", "--json")

        #expect(table.output.contains("/org/bleadvd/advertisement/1 on hci0 (\(DaemonSession.address))"))
        #expect(json.output.contains("\"adapter\": \"hci0\", \"adapter_address\": \"\(DaemonSession.address)\""))
    }

    @Test("an advertisement a central's link took off air and the stack refused beside it: paused in StateChanged, status and the journal, on again when the link ends")
    func pausedByALink() async throws {
        let session = try await DaemonSession(onDBus: true) { mock in
            mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0", address: DaemonSession.address, secondaryChannels: [.oneM])])))
        }
        let listener = try await DBusConnection.connect(to: .address(session.bus.address))
        var signals = try await listener.signals(matching: DBusMatchRule(
            sender: ControlAPI.busName, interface: ControlAPI.interface, member: ControlAPI.StateChanged.name)).makeAsyncIterator()
        session.mock.scriptStart(.always(.failure(PeripheralError(.failed, "Failed to register advertisement"))))

        session.mock.emit(.connected(central: "AA:BB:CC:DD:EE:01", adapter: "hci0"))
        await session.clock.waitForSleepers()
        session.clock.advance(by: BluetoothModule<ManualClock>.linkSettle)
        let paused = await signals.next()?.body
        let status = try await session.ctl("status")
        let json = try await session.ctl("status", "--json")
        session.mock.scriptStart(.always(.success(RegistrationID("/org/bleadvd/advertisement/2"))))
        session.mock.emit(.disconnected(central: "AA:BB:CC:DD:EE:01", adapter: "hci0"))
        let back = await signals.next()?.body

        #expect(paused == [.string("heart"), .string("paused")])
        #expect(status.output.contains("heart  advertisement  paused  on      0s     a central is connected on hci0 (Failed to register advertisement)"))
        #expect(json.output.contains("\"heart\": {\"kind\": \"advertisement\", \"desired\": true, \"state\": \"paused\""))
        #expect(session.logs.all.contains { $0.contains("heart: paused: a central is connected on hci0") })
        #expect(back == [.string("heart"), .string("on")])
    }

    @Test("with no daemon on the bus, bleadvctl exits 3 at once: a command, and watch, which would wait for good", arguments: ["status", "watch"])
    func notRunning(_ command: String) async throws {
        let bus = try await PrivateBus()

        let result = try await runProgram(product("bleadvctl"), [command], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])

        #expect(result.status == 3)
        #expect(result.errors.hasPrefix("bleadvctl: bleadvd is not running"))
    }
}
