import AdvertiserControl
import AdvertiserDaemon
import DBus
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// Values changed on air: `Set` and `bleadvctl set`, against the daemon over the mock.
@Suite("Values changed on air", .timeLimit(.minutes(3)))
struct SetTests {
    static let config = DaemonSession.config + """

        [advertisement.kitchen.bthome]
        local_name = "Kitchen"
        temperature = 21.5
        humidity = 40.2
        battery = 87
        """

    /// A session on the in-memory bus whose kitchen sensor is on air, and its ValuesChanged
    /// lines from then on.
    func session() async throws -> (DaemonSession, Following<ControlAPI.ValuesChanged>) {
        let session = try await DaemonSession(config: Self.config) { $0.scriptUpdate(.always(.success(()))) }
        let changes = try session.following(ControlAPI.ValuesChanged.self) { $0.name == "kitchen" }
        try await session.daemon.advertising.on(["kitchen"])
        return (session, changes)
    }

    /// A session on a dbus-daemon whose kitchen sensor is on air, and ValuesChanged as a
    /// listener on the bus hears it (the listener lives as long as the session: see
    /// `DaemonSession.keep`).
    func sessionOnDBus() async throws -> (DaemonSession, AsyncStream<DBusMessage>.Iterator) {
        let session = try await DaemonSession(onDBus: true, config: Self.config) { $0.scriptUpdate(.always(.success(()))) }
        let listener = try await DBusConnection.connect(to: .address(session.bus.address))
        let changes = try await listener.signals(matching: DBusMatchRule(
            sender: ControlAPI.busName, interface: ControlAPI.interface, member: ControlAPI.ValuesChanged.name))
        _ = try await session.ctl("on", "kitchen")
        session.keep(listener)
        return (session, changes.makeAsyncIterator())
    }

    func serviceData(_ advertisement: Advertisement?) -> [UInt8]? {
        advertisement?.serviceData.first?.data
    }

    @Test("set changes a BTHome value in place: BlueZ gets one update, nothing is unregistered")
    func setInPlace() async throws {
        var (session, changes) = try await sessionOnDBus()

        let result = try await session.ctl("set", "kitchen", "temperature=22.5")
        let announced = await changes.next()

        #expect(result.status == 0, "\(result.errors)")
        #expect(session.mock.updateAdvertisementCallCount == 1)
        #expect(session.mock.stopAdvertisingCallCount == 0)
        // Packet id 1, battery 87, 22.5 °C (0x08CA), 40.2 % (0x0FB4).
        #expect(serviceData(session.mock.calls.updated.last?.advertisement) == [0x40, 0x00, 0x01, 0x01, 0x57, 0x02, 0xCA, 0x08, 0x03, 0xB4, 0x0F])
        #expect(announced?.body.first == .string("kitchen"))
    }

    @Test("setting the values in force again sends nothing to BlueZ")
    func sameValuesSendNothing() async throws {
        let (session, _) = try await session()

        try await session.daemon.advertising.set("kitchen", ["temperature": .string("21.5")])
        session.clock.advance(by: Daemon<ManualClock>.updateInterval)
        for _ in 0..<100 { await Task.yield() }

        #expect(session.mock.updateAdvertisementCallCount == 0)
    }

    @Test("a reload that leaves a table as it was keeps its values and packet id on air")
    func reloadKeepsThePacketID() async throws {
        var (session, changes) = try await session()
        try await session.daemon.advertising.set("kitchen", ["temperature": .double(22.5)])
        _ = await changes.next()
        let updates = session.mock.updateAdvertisementCallCount

        try await session.daemon.reload()

        // Still packet id 1 with 22.5 °C: a BTHome receiver would take packet id 0 again for a
        // repeat and drop it.
        #expect(session.mock.updateAdvertisementCallCount == updates)
        #expect(serviceData(session.mock.calls.updated.last?.advertisement) == [0x40, 0x00, 0x01, 0x01, 0x57, 0x02, 0xCA, 0x08, 0x03, 0xB4, 0x0F])
    }

    @Test("a reload that changes an advertisement's table drops a value set before it and not sent yet")
    func reloadDropsAStaleChange() async throws {
        var (session, changes) = try await session()
        try await session.daemon.advertising.set("kitchen", ["temperature": .double(22)])
        _ = await changes.next()
        try await session.daemon.advertising.set("kitchen", ["temperature": .double(23)])
        try Self.config.replacingOccurrences(of: "temperature = 21.5", with: "temperature = 30.5")
            .write(toFile: session.configPath, atomically: true, encoding: .utf8)

        try await session.daemon.reload()
        session.clock.advance(by: Daemon<ManualClock>.updateInterval)
        for _ in 0..<100 { await Task.yield() }

        // 23.00 °C is 0x08FC: it was set for the old table, and never goes on air.
        #expect(!session.mock.calls.updated.contains { serviceData($0.advertisement)?[5...7] == [0x02, 0xFC, 0x08] })
        #expect(await session.daemon.advertising.status()["kitchen"]?.values["bthome.temperature"] == "30.5")
    }

    @Test("1,000 sets in a burst reach BlueZ as a few updates, the last value last")
    func burstsCoalesce() async throws {
        var (session, changes) = try await session()

        for step in 1...1000 {
            try await session.daemon.advertising.set("kitchen", ["temperature": .double(Double(step) / 100)])
        }
        var last = ControlAPI.ValuesChanged()
        while last.values["bthome.temperature"] != "10.0" {
            await session.clock.waitForSleepers()
            session.clock.advance(by: Daemon<ManualClock>.updateInterval)
            last = try #require(await changes.next())
        }

        #expect(session.mock.updateAdvertisementCallCount <= 3)
        // 10.00 °C is 0x03E8.
        #expect(serviceData(session.mock.calls.updated.last?.advertisement)?[5...7] == [0x02, 0xE8, 0x03])
    }

    @Test("status shows the values now on air")
    func statusShowsValues() async throws {
        var (session, changes) = try await sessionOnDBus()
        _ = try await session.ctl("set", "kitchen", "temperature=22.5", "door=true")
        _ = await changes.next()

        let table = try await session.ctl("status")

        #expect(table.output.contains("kitchen  advertisement  on"))
        #expect(table.output.contains("battery=87 door=true humidity=40.2 temperature=22.5"))
    }

    @Test("a value set refused by the config's rules exits 2 with one line, and nothing changes on air", arguments: [
        (["kitchen", "temperature=400"], "bleadvctl: advertisement.kitchen.bthome.temperature: is 400; it must be between -327.68 and 327.67 °C\n"),
        (["kitchen", "temprature=1"], "bleadvctl: advertisement.kitchen.bthome.temprature: unknown key; known keys: acceleration,"),
        (["kitchen", "temperature=warm"], "bleadvctl: advertisement.kitchen.bthome.temperature: must be a number, not string\n"),
        (["kitchen", "co2=400", "pressure=1000", "illuminance=1", "power=1", "count=1"],
         "bleadvctl: advertisement.kitchen: service_data fcd2 is 32 bytes; advertising data would be 32 of 31 bytes (1 over)\n"),
        (["parlour", "temperature=20"], "bleadvctl: no advertisement or service named \"parlour\"\n"),
        (["kitchen", "temperature=0x1p4"], "bleadvctl: advertisement.kitchen.bthome.temperature: must be a number, not string\n"),
        (["kitchen", "temperature=1", "temperature=2"], "bleadvctl: \"temperature\" is given twice; give each key once (see 'bleadvctl --help')\n"),
        (["kitchen", "temperature=1", "bthome.temperature=2"],
         "bleadvctl: advertisement.kitchen.bthome.temperature: is given twice (as \"bthome.temperature\" and \"temperature\"); give each key once\n"),
        (["kitchen", "enabled=false"], "bleadvctl: advertisement.kitchen.enabled: is not a value; turn advertisements on and off with bleadvctl on and off\n"),
    ])
    func refused(arguments: [String], message: String) async throws {
        let (session, _) = try await sessionOnDBus()

        let result = try await runProgram(
            product("bleadvctl"), ["set"] + arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address])

        #expect(result.status == 2)
        #expect(result.errors.hasPrefix(message), "\(result.errors)")
        #expect(session.mock.updateAdvertisementCallCount == 0)
        #expect(try await session.ctl("status", "--json").output.contains("\"bthome.temperature\": \"21.5\""))
    }

    @Test("a reload keeps values set at run time where the file did not change, and takes the file's where it did")
    func reloadKeepsUnchangedValues() async throws {
        var (session, changes) = try await session()
        try await session.daemon.advertising.set("kitchen", ["temperature": .string("22.5")])
        _ = await changes.next()
        try session.writeConfig(Self.config.replacingOccurrences(of: "Thermo-1", with: "Thermo-2"))

        try await session.daemon.reload()
        let kept = await session.daemon.advertising.status()["kitchen"]?.values
        try session.writeConfig(Self.config.replacingOccurrences(of: "battery = 87", with: "battery = 50"))
        try await session.daemon.reload()
        let fromFile = await session.daemon.advertising.status()["kitchen"]?.values

        #expect(kept?["bthome.temperature"] == "22.5")
        #expect(fromFile?["bthome.temperature"] == "21.5")
        #expect(fromFile?["bthome.battery"] == "50")
    }

    static let encryptedConfig = Self.config + "\nencryption_key = \"231d39c1d7cc1ab1aee224cd096db932\"\n"

    @Test("an encrypted sensor's readings are not in the status a user outside the trusted set gets, and are in a trusted one's",
          arguments: [false, true])
    func encryptedReadingsInStatus(trusted: Bool) async throws {
        let session = try await DaemonSession(config: Self.encryptedConfig, users: [":1.7": 1000], trusts: { _ in trusted })
        try await session.daemon.advertising.on(["kitchen"])

        let status = await session.daemon.advertising.status(for: ":1.7")

        let values = try #require(status["kitchen"]?.values)
        #expect(values.values.contains("21.5") == trusted, "\(values)")
    }

    @Test("an encrypted sensor's new readings are broadcast without them, and reach no journal line")
    func encryptedReadingsNotBroadcastNorLogged() async throws {
        let session = try await DaemonSession(config: Self.encryptedConfig) { $0.scriptUpdate(.always(.success(()))) }
        var changes = try session.following(ControlAPI.ValuesChanged.self, to: .everyone) { $0.name == "kitchen" }
        try await session.daemon.advertising.on(["kitchen"])

        try await session.daemon.advertising.set("kitchen", ["temperature": .string("23.25")])
        let broadcast = try #require(await changes.next())

        #expect(!broadcast.values.keys.contains { $0.hasPrefix("bthome.") }, "\(broadcast)")
        #expect(!session.logs.all.contains { $0.contains("23.25") }, "\(session.logs.all)")
        #expect(session.logs.all.contains { $0.contains("kitchen: set temperature (encrypted: not shown)") }, "\(session.logs.all)")
    }

    @Test("an encrypted sensor goes on air sealed, and neither status nor set ever shows its key")
    func encryptedSensor() async throws {
        let key = "231d39c1d7cc1ab1aee224cd096db932"
        let session = try await DaemonSession(onDBus: true, config: Self.config + "\nencryption_key = \"\(key)\"\n")
        _ = try await session.ctl("on", "kitchen")

        let status = try await session.ctl("status")
        let refused = try await session.ctl("set", "kitchen", "encryption_key=00112233445566778899aabbccddeeff")

        let sent = try #require(serviceData(session.mock.calls.started.last?.advertisement))
        let opened = BTHome.open(sent, key: BTHome.Key(hex: key)!, address: BTHome.addressBytes(DaemonSession.address)!)
        #expect(opened == [0x41, 0x00, 0x00, 0x01, 0x57, 0x02, 0x66, 0x08, 0x03, 0xB4, 0x0F])
        #expect(status.output.contains("temperature=21.5"), "\(status.output)")
        #expect(!status.output.contains("231d39c1") && !status.output.contains("encryption_key"))
        #expect(refused.status == 2)
        #expect(refused.errors.contains("cannot be set at run time"), "\(refused.errors)")
    }
}
