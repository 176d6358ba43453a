import AdvertiserConfig
import Foundation
import Peripheral
import Testing

@Suite("The config file")
struct ConfigParserTests: ReadsConfigText {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("systemd/bleadvd.toml").path

    @Test("the shipped example config reads as documented")
    func exampleConfig() throws {
        let config = try ConfigParser.load(path: Self.example)

        #expect(config.adapter == nil)
        #expect(config.powerOn)
        #expect(config.names == ["door", "heart", "kitchen"])
        #expect(config.advertisements["heart"]?.enabled == true)
        #expect(config.advertisements["heart"]?.advertisement == Advertisement(
            kind: .peripheral, serviceUUIDs: [BluetoothUUID(0x180D), BluetoothUUID(0x180F)],
            manufacturerData: [.init(companyID: 0xFFFF, data: [1, 2, 3, 4])],
            serviceData: [.init(uuid: BluetoothUUID(0x9999), data: [0, 1])], localName: "Thermo-1"))
        #expect(config.advertisements["door"]?.enabled == false)
        #expect(config.advertisements["door"]?.advertisement == (try Beacon.iBeacon(
            uuid: try BluetoothUUID("e2c56db5-dffb-48d2-b060-d0f5a71096e0"), major: 1, minor: 2, measuredPower: -59
        ).advertisement()))
        #expect(config.advertisements["kitchen"]?.enabled == false)
        #expect(config.advertisements["kitchen"]?.bthome == BTHome(values: ["temperature": 21.5, "humidity": 40.2, "battery": 87]))
        #expect(config.advertisements["kitchen"]?.advertisement.localName == "Kitchen")
    }

    @Test("every field maps to its advertisement property")
    func everyField() throws {
        let config = try parse("""
            adapter = "hci1"
            power_on = false
            [advertisement.all]
            type = "broadcast"
            solicit_uuids = ["1812"]
            data = { "0x26" = "aa" }
            appearance = 0x0341
            includes = ["tx-power"]
            discoverable_timeout = 5
            duration = 2
            timeout = 60
            secondary_channel = "2M"
            min_interval_ms = 100
            max_interval_ms = 200
            tx_power = -4
            """)

        #expect(config.adapter == "hci1")
        #expect(config.powerOn == false)
        #expect(config.advertisements["all"]?.advertisement == Advertisement(
            kind: .broadcast, solicitUUIDs: [BluetoothUUID(0x1812)], data: [.init(type: 0x26, data: [0xAA])],
            discoverableTimeout: 5, includes: [.txPower], appearance: 0x0341, duration: 2, timeout: 60,
            secondaryChannel: .twoM, minInterval: 100, maxInterval: 200, txPower: -4))
    }

    @Test("each preset builds its beacon", arguments: [
        ("altbeacon = { manufacturer_id = 0x0118, beacon_id = \"000102030405060708090a0b0c0d0e0f10111213\", reference_rssi = -59 }",
         Beacon.altBeacon(manufacturerID: 0x0118, beaconID: Array(0...19), referenceRSSI: -59)),
        ("eddystone_uid = { namespace = \"00112233445566778899\", instance = \"aabbccddeeff\", tx_power = -20 }",
         Beacon.eddystoneUID(namespace: [0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99],
                             instance: [0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF], txPower: -20)),
        ("eddystone_url = { url = \"https://example.com\", tx_power = -20 }",
         Beacon.eddystoneURL(url: "https://example.com", txPower: -20)),
    ])
    func presets(line: String, beacon: Beacon) throws {
        let config = try parse("[advertisement.b]\n" + line + "\n")

        #expect(config.advertisements["b"]?.advertisement == (try beacon.advertisement()))
    }

    @Test("an adapter may be named by its address, which stays with the controller whatever the kernel names it")
    func adapterByAddress() throws {
        let config = try parse("adapter = \"00:1a:7d:da:71:13\"\n")

        #expect(config.adapter == "00:1a:7d:da:71:13")
    }

    @Test("errors name the file, the line and the key", arguments: [
        ("colour = \"red\"\n", "test.toml:1: colour: unknown key; known keys: adapter, advertisement, alias, centrals, improv, pairing, power_on, service"),
        ("[advertisement.a]\nlocal_name = \"A\"\nlocal_nam = \"B\"\n", "test.toml:3: advertisement.a.local_nam: unknown key"),
        ("[advertisement.a]\nlocal_name = 5\n", "test.toml:2: advertisement.a.local_name: must be a string, not integer"),
        ("[advertisement.a]\ntype = \"beacon\"\n", "test.toml:2: advertisement.a.type: \"beacon\" is not a type; use \"peripheral\" or \"broadcast\""),
        ("[advertisement.a]\nservice_uuids = [\"18G0\"]\n", "test.toml:2: advertisement.a.service_uuids: \"18G0\" is not a UUID"),
        ("[advertisement.a]\nmanufacturer_data = { \"0x1FFFF\" = \"01\" }\n", "test.toml:2: advertisement.a.manufacturer_data.0x1FFFF: \"0x1FFFF\" is not a company id"),
        ("[advertisement.a]\nservice_data = { \"9999\" = \"0g\" }\n", "test.toml:2: advertisement.a.service_data.9999: \"0g\" is not hex bytes"),
        ("[advertisement.a]\ntx_power = 30\n", "test.toml:2: advertisement.a.tx_power: is 30; it must be between -127 and 20"),
        ("[advertisement.door.ibeacon]\nuuid = \"e2c56db5-dffb-48d2-b060-d0f5a71096e0\"\nmajor = 70000\nminor = 2\nmeasured_power = -59\n",
         "test.toml:3: advertisement.door.ibeacon.major: is 70000; it must be between 0 and 65535"),
        ("[advertisement.door.ibeacon]\nuuid = \"e2c56db5-dffb-48d2-b060-d0f5a71096e0\"\nminor = 2\nmeasured_power = -59\n",
         "test.toml:1: advertisement.door.ibeacon.major: missing; the ibeacon preset needs it"),
        ("[advertisement.door]\nlocal_name = \"x\"\n[advertisement.door.ibeacon]\nuuid = \"e2c56db5-dffb-48d2-b060-d0f5a71096e0\"\n",
         "test.toml:2: advertisement.door.local_name: cannot be combined with the ibeacon preset"),
        ("[advertisement.\"bad name\"]\nlocal_name = \"x\"\n", "test.toml:1: advertisement.bad name: names may use letters"),
        ("[advertisement.a\n", "test.toml:1: "),
        ("adapter = \"00:1A:7D:DA:71\"\n", "test.toml:1: adapter: \"00:1A:7D:DA:71\" is neither an adapter name (hci0) nor an address (00:1A:7D:DA:71:13)"),
    ])
    func locatedErrors(text: String, expected: String) {
        let message = error(text)

        #expect(message?.hasPrefix(expected) == true, "\(message ?? "no error")")
    }

    @Test("an advertisement over the 31-byte budget is refused at its table, with the byte count")
    func overBudget() {
        let message = error("[advertisement.big]\nlocal_name = \"x\"\nservice_uuids = [\"6e400001-b5a3-f393-e0a9-e50e24dcca9e\", \"6e400002-b5a3-f393-e0a9-e50e24dcca9e\"]\n")

        #expect(message == "test.toml:1: advertisement.big: service_uuids is 34 bytes; advertising data would be 34 of 31 bytes (3 over)")
    }

    @Test("a missing file is an error naming it")
    func missingFile() {
        #expect(throws: ConfigError(file: "/nonexistent.toml", line: nil, key: "", message: "the config file does not exist")) {
            try ConfigParser.load(path: "/nonexistent.toml")
        }
    }
}
