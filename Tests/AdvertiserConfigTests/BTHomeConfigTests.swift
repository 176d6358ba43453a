import AdvertiserConfig
import Peripheral
import Testing

@Suite("BTHome in the config, and values changed at run time")
struct BTHomeConfigTests {
    static let kitchen = """
        [advertisement.kitchen.bthome]
        local_name = "Kitchen"
        temperature = 21.5
        humidity = 40.2
        battery = 87
        """

    func error(_ text: String) -> String? {
        do {
            _ = try ConfigParser.parse(text, file: "t.toml")
            return nil
        } catch {
            return error.description
        }
    }

    func kitchen() throws -> ConfiguredAdvertisement {
        try #require(try ConfigParser.parse(Self.kitchen, file: "t.toml").advertisements["kitchen"])
    }

    func applyingError(_ changes: [String: ConfigValue], to configured: ConfiguredAdvertisement) -> String? {
        do {
            _ = try ConfigParser.applying(changes, to: configured, name: "kitchen")
            return nil
        } catch {
            return error.description
        }
    }

    @Test("a bthome table becomes a connectable advertisement of its service data, with the name in the scan response")
    func bthomeTable() throws {
        let configured = try kitchen()

        #expect(configured.advertisement.kind == .peripheral)
        #expect(configured.advertisement.localName == "Kitchen")
        #expect(configured.advertisement.serviceData == [.init(
            uuid: BTHome.serviceUUID, data: [0x40, 0x00, 0x00, 0x01, 0x57, 0x02, 0x66, 0x08, 0x03, 0xB4, 0x0F])])
    }

    @Test("a new packet id changes only the packet id byte")
    func packetID() throws {
        let ad = try kitchen().advertisement(packetID: 5)

        #expect(ad.serviceData.first?.data == [0x40, 0x00, 0x05, 0x01, 0x57, 0x02, 0x66, 0x08, 0x03, 0xB4, 0x0F])
    }

    @Test("config errors name the key, the line and the range", arguments: [
        ("[advertisement.k.bthome]\ntemperature = 400\n", "t.toml:2: advertisement.k.bthome.temperature: is 400; it must be between -327.68 and 327.67 °C"),
        ("[advertisement.k.bthome]\nbattery = 120\n", "t.toml:2: advertisement.k.bthome.battery: is 120; it must be between 0 and 100 %"),
        ("[advertisement.k.bthome]\ntemprature = 1\n", "t.toml:2: advertisement.k.bthome.temprature: unknown key; known keys: acceleration, acceleration_s32, battery,"),
        ("[advertisement.k.bthome]\ndoor = 1\n", "t.toml:2: advertisement.k.bthome.door: must be true or false, not int"),
        ("[advertisement.k.bthome]\ntemperature = \"warm\"\n", "t.toml:2: advertisement.k.bthome.temperature: must be a number, not string"),
        ("[advertisement.k.bthome]\nlocal_name = \"x\"\n", "t.toml:1: advertisement.k.bthome: has no measurement; give at least one, e.g. temperature = 21.5"),
        ("[advertisement.k.bthome]\nbattery = 1\nencryption_key = \"231d39c1d7cc1ab1aee224cd096db9\"\n",
         "t.toml:3: advertisement.k.bthome.encryption_key: must be 32 hex digits (a 16-byte key); this one has 30 characters"),
        ("[advertisement.k.bthome]\nbattery = 1\nencryption_key = \"231d39c1d7cc1ab1aee224cd096db9zz\"\n",
         "t.toml:3: advertisement.k.bthome.encryption_key: must be 32 hex digits (a 16-byte key); character 31 is not a hex digit"),
        ("[advertisement.k.bthome]\nbattery = 1\nencryption_key = 5\n", "t.toml:3: advertisement.k.bthome.encryption_key: must be a string"),
    ])
    func configErrors(text: String, message: String) {
        #expect(error(text)?.hasPrefix(message) == true, "\(error(text) ?? "no error")")
    }

    @Test("set changes a measurement given by name, and nothing else")
    func setMeasurement() throws {
        let changed = try ConfigParser.applying(["temperature": .double(22.25)], to: try kitchen(), name: "kitchen")

        #expect(changed.bthome?.values == ["temperature": [22.25], "humidity": [40.2], "battery": [87]])
        #expect(changed.settings["bthome.temperature"] == .double(22.25))
    }

    @Test("set may add a measurement the file did not have")
    func setNewMeasurement() throws {
        let changed = try ConfigParser.applying(["door": .bool(true)], to: try kitchen(), name: "kitchen")

        #expect(changed.bthome?.values["door"] == [1])
    }

    @Test("a measurement given as an array is sent that many times, in the array's order")
    func repeatedMeasurement() throws {
        let text = "[advertisement.probe.bthome]\ntemperature = [21.5, 19.0, 64.2]\nbattery = 80\n"

        let sensor = try #require(try ConfigParser.parse(text, file: "t.toml").advertisements["probe"]?.bthome)

        #expect(sensor.values == ["temperature": [21.5, 19.0, 64.2], "battery": [80]])
    }

    @Test("several values of a measurement are refused one by one, saying which", arguments: [
        ("temperature = []", "t.toml:2: advertisement.p.bthome.temperature: is an empty array; give one value or several, e.g. temperature = [21.5, 19.0]"),
        ("temperature = [21.5, 400]", "t.toml:2: advertisement.p.bthome.temperature: value 2 of 2 is 400; it must be between -327.68 and 327.67 °C"),
        ("temperature = [21.5, \"warm\"]", "t.toml:2: advertisement.p.bthome.temperature: value 2 of 2 must be a number, not string"),
        ("door = [true, 1]", "t.toml:2: advertisement.p.bthome.door: value 2 of 2 must be true or false, not integer"),
    ])
    func repeatedMeasurementErrors(line: String, message: String) {
        #expect(error("[advertisement.p.bthome]\n\(line)\n") == message)
    }

    @Test("eight temperatures fill the 31 bytes; a ninth is refused with the count of objects")
    func repeatedMeasurementTooLong() {
        // Service data: length, type, UUID (4), device information (1), packet id (2), and 3 bytes
        // a temperature: 7 + 3 × 8 = 31.
        func temperatures(_ count: Int) -> String {
            "[advertisement.p.bthome]\ntemperature = [" + Array(repeating: "21.5", count: count).joined(separator: ", ") + "]\n"
        }

        let nine = error(temperatures(9))

        #expect(error(temperatures(8)) == nil)
        #expect(nine?.contains("advertising data would be 34 of 31 bytes (3 over); the sensor sends 9 objects: temperature ×9") == true, "\(nine ?? "no error")")
    }

    @Test("set takes several values of a measurement, separated by commas")
    func setRepeatedMeasurement() throws {
        let typed = ConfigValue(parsing: "21.5,19,64.2", like: .double(21.5))

        let changed = try ConfigParser.applying(["temperature": typed], to: try kitchen(), name: "kitchen")

        #expect(changed.bthome?.values["temperature"] == [21.5, 19, 64.2])
    }

    @Test("set refuses what the config would refuse, naming the key", arguments: [
        (["temperature": ConfigValue.integer(400)], "advertisement.kitchen.bthome.temperature: is 400; it must be between -327.68 and 327.67 °C"),
        (["temprature": .integer(1)], "advertisement.kitchen.bthome.temprature: unknown key; known keys: acceleration,"),
        (["enabled": .bool(false)], "advertisement.kitchen.enabled: is not a value; turn advertisements on and off with bleadvctl on and off"),
        (["co2": .integer(400), "pressure": .double(1000), "illuminance": .integer(1), "power": .integer(1), "count": .integer(1)],
         "advertisement.kitchen: service_data fcd2 is 32 bytes; advertising data would be 32 of 31 bytes (1 over)"),
    ])
    func setRefusals(changes: [String: ConfigValue], message: String) throws {
        let failure = applyingError(changes, to: try kitchen())

        #expect(failure?.hasPrefix(message) == true, "\(failure ?? "no error")")
    }

    @Test("set changes a beacon preset's field by its name", arguments: [("major", ConfigValue.integer(7))])
    func setBeaconField(key: String, value: ConfigValue) throws {
        let door = try #require(try ConfigParser.parse("""
            [advertisement.door.ibeacon]
            uuid = "e2c56db5-dffb-48d2-b060-d0f5a71096e0"
            major = 1
            minor = 2
            measured_power = -59
            """, file: "t.toml").advertisements["door"])

        let changed = try ConfigParser.applying([key: value], to: door, name: "door")

        #expect(changed.advertisement.manufacturerData.first?.data[18...19] == [0x00, 0x07])
    }

    @Test("set changes raw fields: a name, and one company's manufacturer data")
    func setRawFields() throws {
        let heart = try #require(try ConfigParser.parse("""
            [advertisement.heart]
            local_name = "Thermo-1"
            manufacturer_data = { "0xFFFF" = "0102" }
            """, file: "t.toml").advertisements["heart"])

        let changed = try ConfigParser.applying(
            ["local_name": .string("Thermo-2"), "manufacturer_data.0xFFFF": .string("0a0b0c")], to: heart, name: "heart")

        #expect(changed.advertisement.localName == "Thermo-2")
        #expect(changed.advertisement.manufacturerData == [.init(companyID: 0xFFFF, data: [0x0A, 0x0B, 0x0C])])
    }

    @Test("a value for a whole table is refused, naming an entry to set instead")
    func setWholeTable() throws {
        let heart = try #require(try ConfigParser.parse("""
            [advertisement.heart]
            manufacturer_data = { "0xFFFF" = "0102" }
            """, file: "t.toml").advertisements["heart"])

        let error = #expect(throws: ConfigError.self) {
            try ConfigParser.applying(["manufacturer_data": .string("01")], to: heart, name: "heart")
        }

        #expect(error?.description == "advertisement.heart.manufacturer_data: is a table; set one of its entries, e.g. manufacturer_data.0xFFFF")
    }

    @Test("one key given twice, with and without its preset's name, is refused")
    func setKeyTwice() throws {
        let message = applyingError(["temperature": .double(1), "bthome.temperature": .double(2)], to: try kitchen())

        #expect(message == "advertisement.kitchen.bthome.temperature: is given twice (as \"bthome.temperature\" and \"temperature\"); give each key once")
    }

    @Test("typed numbers are read as TOML writes them, not as C does", arguments: [
        ("0x10", ConfigValue.integer(16)),
        ("-0", .integer(0)),
        ("1e3", .double(1000)),
        ("-21.5", .double(-21.5)),
        ("0x1p4", .string("0x1p4")),
        ("0x+4C", .string("0x+4C")),
        ("inf", .string("inf")),
        ("nan", .string("nan")),
        ("0b102", .string("0b102")),
    ])
    func parsingNumbers(text: String, expected: ConfigValue) {
        #expect(ConfigValue(parsing: text, like: .double(0)) == expected)
    }

    @Test("typed text takes the type the key holds now", arguments: [
        ("0102", ConfigValue?.some(.string("x")), ConfigValue.string("0102")),
        ("21.5", nil, .double(21.5)),
        ("21", .double(1), .integer(21)),
        ("true", nil, .bool(true)),
        ("180D,180F", .array([]), .array([.string("180D"), .string("180F")])),
        ("21.5,19", .double(1), .array([.double(21.5), .integer(19)])),
        ("21.5,,19", .double(1), .array([.double(21.5), .string(""), .integer(19)])),
        ("3,4", .array([.double(1)]), .array([.integer(3), .integer(4)])),
        ("true,false", .bool(true), .array([.bool(true), .bool(false)])),
    ])
    func parsingText(text: String, current: ConfigValue?, expected: ConfigValue) {
        #expect(ConfigValue(parsing: text, like: current) == expected)
    }

    @Test("an encryption key makes an encrypted sensor: the flag in the device information byte, the key on the advertisement")
    func encryptionKey() throws {
        let text = Self.kitchen + "\nencryption_key = \"231d39c1d7cc1ab1aee224cd096db932\"\n"

        let configured = try #require(try ConfigParser.parse(text, file: "t.toml").advertisements["kitchen"])

        #expect(configured.advertisement.bthomeKey == BTHome.Key(hex: "231d39c1d7cc1ab1aee224cd096db932"))
        #expect(configured.advertisement.serviceData.first?.data.first == 0x41)
        #expect(configured.shownSettings["bthome.encryption_key"] == nil)
        #expect(configured.shownSettings["bthome.temperature"] == .double(21.5))
    }

    @Test("the encryption key cannot be set at run time")
    func encryptionKeyNotSettable() throws {
        let text = Self.kitchen + "\nencryption_key = \"231d39c1d7cc1ab1aee224cd096db932\"\n"
        let configured = try #require(try ConfigParser.parse(text, file: "t.toml").advertisements["kitchen"])

        #expect(applyingError(["encryption_key": .string("00112233445566778899aabbccddeeff")], to: configured)
            == "advertisement.kitchen.encryption_key: cannot be set at run time; change it in the config file and reload")
    }

    @Test("an encrypted sensor is sized with its counter and tag: 8 bytes more than the plain one")
    func encryptedSize() {
        let measurements = "temperature = 21.5\nhumidity = 40.2\nbattery = 87\npressure = 1000\nco2 = 400\nilluminance = 10\n"
        let plain = "[advertisement.k.bthome]\n" + measurements
        let encrypted = plain + "encryption_key = \"231d39c1d7cc1ab1aee224cd096db932\"\n"

        #expect(error(plain) == nil)
        #expect(error(encrypted)?.contains("advertising data would be 34 of 31 bytes (3 over)") == true, "\(error(encrypted) ?? "no error")")
    }
}
