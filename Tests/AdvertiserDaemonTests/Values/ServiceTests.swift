import AdvertiserControl
import AdvertiserDaemon
import DBus
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// GATT services in the daemon, over the mock: registered at start, values set with
/// `bleadvctl set`, centrals' writes announced as `Written`, shown by `status`.
@Suite("GATT services in the daemon", .timeLimit(.minutes(3)))
struct ServiceTests {
    static let config = DaemonSession.config + "\n" + ConfigFixtures.battery + ConfigFixtures.lamp
        + ConfigFixtures.lampLabel + ConfigFixtures.lampBrightness
    static let app = RegistrationID("/org/bleadvd/gatt/app1")
    static let level = GATTCharacteristicID(service: "power", characteristic: "level")
    static let label = GATTCharacteristicID(service: "lamp", characteristic: "label")

    func session(onDBus: Bool = false) async throws -> DaemonSession {
        try await DaemonSession(onDBus: onDBus, config: Self.config, users: [":1.7": 0]) { mock in
            mock.scriptRegisterApplication(.always(.success(Self.app)))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptAgent()
            mock.scriptUpdateValue(.always(.success(())))
        }
    }

    /// On the in-memory bus, the Written lines a trusted subscriber (`:1.7`, root) is sent:
    /// whole, to it alone.
    func writtenLines(_ session: DaemonSession) async throws -> Following<ControlAPI.Written> {
        let lines = try session.following(ControlAPI.Written.self, to: .subscriber(":1.7"))
        try await session.daemon.advertising.subscribe(":1.7")
        return lines
    }

    /// The session's ValuesChanged signals, as a listener on the bus hears them.
    func valuesChanged(_ session: DaemonSession) async throws -> AsyncStream<DBusMessage>.Iterator {
        let listener = try await DBusConnection.connect(to: .address(session.bus.address))
        session.keep(listener)
        return try await listener.signals(matching: DBusMatchRule(
            sender: ControlAPI.busName, interface: ControlAPI.interface, member: ControlAPI.ValuesChanged.name)).makeAsyncIterator()
    }

    @Test("the configured services are registered as one application at start")
    func registeredAtStart() async throws {
        let session = try await session()

        let registered = session.mock.calls.registeredApplications

        #expect(registered.count == 1)
        #expect(registered.first?.application.services.map(\.name) == ["lamp", "power"])
        #expect(registered.first?.application[Self.level]?.value == [80])
    }

    @Test("list names the services with the advertisements, as status does")
    func listAgreesWithStatus() async throws {
        let session = try await session(onDBus: true)

        let list = try await session.ctl("list").output
        let status = try await session.ctl("status", "--json").output

        let json = try JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: [String: Any]]
        #expect(list == "door\nheart\nlamp\npower\n")
        #expect(json.map { $0.keys.sorted() } == ["door", "heart", "lamp", "power"])
    }

    @Test("status gives each name its kind, in JSON and in the table")
    func statusHasKinds() async throws {
        let session = try await session(onDBus: true)

        let json = try JSONSerialization.jsonObject(with: Data(try await session.ctl("status", "--json").output.utf8)) as? [String: [String: Any]]
        let table = try await session.ctl("status").output.split(separator: "\n").map { $0.split(separator: " ").prefix(2) }

        #expect(json?["heart"]?["kind"] as? String == "advertisement")
        #expect(json?["lamp"]?["kind"] as? String == "service")
        #expect(table.contains(["power", "service"]))
        #expect(table.contains(["door", "advertisement"]))
    }

    @Test("bleadvctl set changes a characteristic's value in place")
    func setChangesValue() async throws {
        let session = try await session(onDBus: true)
        var changes = try await valuesChanged(session)

        let result = try await session.ctl("set", "power", "level=75")
        let announced = await changes.next()

        #expect(result.status == 0, "\(result.errors)")
        #expect(session.mock.calls.updatedValues.first?.value == [75])
        #expect(session.mock.calls.updatedValues.first?.characteristic == Self.level)
        #expect(session.mock.calls.registeredApplications.count == 1)
        #expect(announced?.body.first == .string("power"))
    }

    @Test("text typed for a text characteristic stays text, digits included")
    func setTextOfDigits() async throws {
        let session = try await session(onDBus: true)
        var changes = try await valuesChanged(session)

        let result = try await session.ctl("set", "lamp", "label=42")
        _ = await changes.next()

        #expect(result.status == 0, "\(result.errors)")
        #expect(session.mock.calls.updatedValues.first?.value == Array("42".utf8))
    }

    @Test("a value that does not fit the characteristic is refused with exit 2, and nothing is sent")
    func setRefused() async throws {
        let session = try await session(onDBus: true)

        let result = try await session.ctl("set", "power", "level=101")

        #expect(result.status == 2)
        #expect(result.errors.contains("service.power.level: is 101; it must be between 0 and 100"))
        #expect(session.mock.calls.updatedValues.isEmpty)
    }

    @Test("a central's write is announced as Written, and status shows the new value")
    func writeAnnounced() async throws {
        let session = try await session()
        var written = try await writtenLines(session)

        session.mock.emit(.gatt(GATTEvent(Self.label, .written(Array("sofa".utf8), .text("sofa")), central: "AA:BB:CC:DD:EE:FF")))
        let signal = await written.next()

        #expect(signal == ControlAPI.Written(Self.label, value: .text("sofa"), central: "AA:BB:CC:DD:EE:FF"))
        #expect(await session.daemon.advertising.status()["lamp"]?.values["label"] == "sofa")
    }

    @Test("a flood of writes to one characteristic is announced once at once and once per interval after, with the newest value")
    func writeFloodCoalesced() async throws {
        let session = try await session()
        var written = try await writtenLines(session)
        let brightness = GATTCharacteristicID(service: "lamp", characteristic: "brightness")

        for level in 1...50 {
            session.mock.emit(.gatt(GATTEvent(brightness, .written([UInt8(level)], .number(Double(level))), central: "AA:BB:CC:DD:EE:FF")))
        }
        let first = await written.next()
        // Every write taken (the newest is in force) before the interval ends.
        try await eventually("status shows brightness 50", every: .milliseconds(1)) { await session.daemon.advertising.status()["lamp"]?.values["brightness"] == "50" }
        await session.clock.waitForSleepers()
        session.clock.advance(by: .milliseconds(100))
        let second = await written.next()
        await session.clock.waitForSleepers()
        session.clock.advance(by: .milliseconds(100))
        // Nothing more came for brightness: the next signal is the label's.
        session.mock.emit(.gatt(GATTEvent(Self.label, .written(Array("sofa".utf8), .text("sofa")), central: "AA:BB:CC:DD:EE:FF")))
        let third = await written.next()

        #expect(first?.shown == "lamp.brightness 1")
        #expect(second?.shown == "lamp.brightness 50")
        #expect(third?.id == Self.label, "\(String(describing: third))")
        let lines = session.logs.all.filter { $0.contains("lamp.brightness: AA:BB:CC:DD:EE:FF wrote") }
        #expect(lines.count == 2, "\(lines)")
        // brightness is secured (it takes writes): its value is not in the journal.
        #expect(lines.last?.contains("wrote a secured value (1 bytes, not shown) (the newest of 49 writes in 0.1 seconds)") == true, "\(lines)")
        #expect(await session.daemon.advertising.status()["lamp"]?.values["brightness"] == "50")
    }

    /// The lamp with a write-only characteristic, a PIN.
    static let secretConfig = config + """

        [service.lamp.characteristic.pin]
        uuid = "6e400004-b5a3-f393-e0a9-e50e24dcca9e"
        format = "utf8"
        flags = ["write"]
        value = ""
        secret = true
        """
    static let pin = GATTCharacteristicID(service: "lamp", characteristic: "pin")

    @Test("a central's write to a write-only characteristic is announced without its value, and nothing shows the value")
    func secretWriteNeverShown() async throws {
        let session = try await DaemonSession(config: Self.secretConfig, users: [":1.7": 0]) { mock in
            mock.scriptRegisterApplication(.always(.success(Self.app)))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptAgent()
        }
        var written = try await writtenLines(session)

        session.mock.emit(.gatt(GATTEvent(Self.pin, .written(Array("hunter2".utf8), .text("hunter2")), central: "AA:BB:CC:DD:EE:FF")))
        let signal = await written.next()
        let status = try #require(await session.daemon.advertising.status(for: ":1.7")["lamp"]?.values)

        #expect(signal?.shown == "lamp.pin (not shown)")
        #expect(!status.values.contains("hunter2") && status["pin"] == nil, "\(status)")
        #expect(status["label"] == "desk")
        #expect(session.logs.all.contains { $0.contains("lamp.pin: AA:BB:CC:DD:EE:FF wrote a secret (7 bytes, not shown)") }, "\(session.logs.all)")
        #expect(!session.logs.all.contains { $0.contains("hunter2") })
    }

    @Test("a central's write to one characteristic does not cancel a set of another of its service still on its way")
    func writeKeepsPendingSet() async throws {
        let session = try await session()
        var changes = try session.following(ControlAPI.ValuesChanged.self, to: .everyone) { $0.name == "lamp" }
        var written = try await writtenLines(session)
        try await session.daemon.advertising.set("lamp", ["brightness": .string("75")])
        _ = await changes.next()
        try await session.daemon.advertising.set("lamp", ["brightness": .string("76")])  // waits for the 100 ms between changes
        await session.clock.waitForSleepers()

        session.mock.emit(.gatt(GATTEvent(Self.label, .written(Array("sofa".utf8), .text("sofa")), central: "AA:BB:CC:DD:EE:FF")))
        _ = await written.next()
        await session.clock.waitForSleepers()
        session.clock.advance(by: .milliseconds(100))
        _ = await changes.next()

        #expect(session.mock.calls.updatedValues.map(\.value) == [[75], [76]])
    }

    @Test("bleadvctl watch prints a central's write as one line")
    func watchPrintsWrite() async throws {
        let session = try await session(onDBus: true)
        let watch = try Child(product("bleadvctl"), ["watch"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address])
        defer { watch.kill(SIGTERM) }
        // The same write until one is printed: watch may not have subscribed yet.
        let writing = Task {
            while !Task.isCancelled {
                session.mock.emit(.gatt(GATTEvent(Self.level, .written([33], .number(33)), central: "AA:BB:CC:DD:EE:FF")))
                try? await Task.sleep(for: .milliseconds(50))
                // A write within the interval is announced at its end: the interval must pass.
                session.clock.advance(by: .milliseconds(100))
            }
        }
        defer { writing.cancel() }

        let line = try await PrivateBus.line(from: watch.stdout)

        #expect(line == "written power level 33 AA:BB:CC:DD:EE:FF")
    }

    @Test("bleadvctl watch quotes a written text with its quotes escaped: it cannot forge the central's field")
    func watchCannotBeForged() async throws {
        let session = try await session(onDBus: true)
        let watch = try Child(product("bleadvctl"), ["watch"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address])
        defer { watch.kill(SIGTERM) }
        let forged = #"x" 11:22:33:44:55:66"#
        let writing = Task {
            while !Task.isCancelled {
                session.mock.emit(.gatt(GATTEvent(Self.label, .written(Array(forged.utf8), .text(forged)), central: "AA:BB:CC:DD:EE:FF")))
                try? await Task.sleep(for: .milliseconds(50))
                session.clock.advance(by: .milliseconds(100))
            }
        }
        defer { writing.cancel() }

        let line = try await PrivateBus.line(from: watch.stdout)

        #expect(line == #"written lamp label "x\" 11:22:33:44:55:66" AA:BB:CC:DD:EE:FF"#)
    }

    @Test("on for a service's name says it is a service, with exit 2")
    func onForAService() async throws {
        let session = try await session(onDBus: true)

        let result = try await session.ctl("on", "power")

        #expect(result.status == 2)
        #expect(result.errors.contains("\"power\" is a GATT service"))
    }

    @Test("a reload that changes only values changes them in place")
    func reloadValuesInPlace() async throws {
        let session = try await session()
        try Self.config.replacingOccurrences(of: "level = 80", with: "level = 60")
            .write(toFile: session.configPath, atomically: true, encoding: .utf8)

        try await session.daemon.reload()

        #expect(session.mock.calls.registeredApplications.count == 1)
        #expect(session.mock.calls.unregisteredApplications.isEmpty)
        #expect(session.mock.calls.updatedValues.map(\.value) == [[60]])
    }

    @Test("a reload of a file that leaves the services as they are asks BlueZ for nothing: the tables a bonded central cached stay valid")
    func reloadUnchangedKeepsTheTables() async throws {
        let session = try await session()

        try await session.daemon.reload()

        #expect(session.mock.calls.registeredApplications.count == 1)
        #expect(session.mock.calls.unregisteredApplications.isEmpty)
        #expect(session.mock.calls.updatedValues.isEmpty)
    }

    @Test("a reload that changes the services' shape registers them anew")
    func reloadShapeReregisters() async throws {
        let session = try await session()
        try (Self.config + "\n[service.info.device_information]\nmodel = \"G1\"\n")
            .write(toFile: session.configPath, atomically: true, encoding: .utf8)

        try await session.daemon.reload()

        #expect(session.mock.calls.unregisteredApplications == [Self.app])
        #expect(session.mock.calls.registeredApplications.last?.application.services.map(\.name) == ["info", "lamp", "power"])
    }

    @Test("writes taken before a reload took their characteristic away are not announced after it")
    func writeWindowOutlivesItsCharacteristic() async throws {
        let session = try await session()
        var written = try await writtenLines(session)
        let brightness = GATTCharacteristicID(service: "lamp", characteristic: "brightness")
        for level in 1...3 {
            session.mock.emit(.gatt(GATTEvent(brightness, .written([UInt8(level)], .number(Double(level))), central: "AA:BB:CC:DD:EE:FF")))
        }
        _ = await written.next()
        try await eventually("status shows brightness 3", every: .milliseconds(1)) { await session.daemon.advertising.status()["lamp"]?.values["brightness"] == "3" }
        try (DaemonSession.config + "\n[service.power.battery]\nlevel = 80\n").write(toFile: session.configPath, atomically: true, encoding: .utf8)
        try await session.daemon.reload()

        await session.clock.waitForSleepers()
        session.clock.advance(by: .milliseconds(100))
        session.mock.emit(.gatt(GATTEvent(Self.level, .written([33], .number(33)), central: "AA:BB:CC:DD:EE:FF")))
        let next = await written.next()

        // The next signal is the battery's: the lamp's pending writes went with the lamp.
        #expect(next?.service == "power", "\(String(describing: next))")
    }

    @Test("stopping unregisters the services")
    func stopUnregisters() async throws {
        let session = try await session()

        session.stop()
        try await session.running.value

        #expect(session.mock.calls.unregisteredApplications == [Self.app])
    }
}
