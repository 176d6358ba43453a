import AdvertiserConfig
import Foundation
import Peripheral
import TestSupport
import Testing

@Suite("GATT services in the config file")
struct ServiceConfigTests: ReadsConfigText {
    /// The lamp with its brightness, without the last newline: tests add keys to the
    /// characteristic's table with "\nkey = value".
    static let lamp = String((ConfigFixtures.lamp + ConfigFixtures.lampBrightness).dropLast())

    @Test("the battery preset is the SIG's Battery Service with its level as one byte")
    func batteryPreset() throws {
        let config = try parse("[service.power.battery]\nlevel = 80\n")

        let service = try #require(config.services["power"]?.service)
        #expect(service.uuid == BluetoothUUID(0x180F))
        #expect(service.characteristics.map(\.uuid) == [BluetoothUUID(0x2A19)])
        #expect(service.characteristics[0].flags == [.read, .notify])
        #expect(service.characteristics[0].value == [80])
    }

    @Test("environmental sensing writes temperature in 0.01 °C, humidity in 0.01 %, pressure in 0.1 Pa")
    func environmentalSensing() throws {
        let config = try parse("[service.climate.environmental_sensing]\ntemperature = -5.25\nhumidity = 40.5\npressure = 1013.2\n")

        let values = try #require(config.services["climate"]?.service.characteristics).map(\.value)
        #expect(values == [[0xF3, 0xFD], [0xD2, 0x0F], [0xD0, 0x75, 0x0F, 0x00]])
    }

    @Test("device information holds its strings as UTF-8")
    func deviceInformation() throws {
        let config = try parse("[service.info.device_information]\nmanufacturer = \"Acme\"\nmodel = \"G1\"\n")

        let service = try #require(config.services["info"]?.service)
        #expect(service.uuid == BluetoothUUID(0x180A))
        #expect(service.characteristics.map(\.value) == [Array("Acme".utf8), Array("G1".utf8)])
    }

    @Test("a custom service has its characteristics with their declared format and flags")
    func customService() throws {
        let config = try parse(Self.lamp)

        let characteristic = try #require(config.services["lamp"]?.service.characteristics.first)
        #expect(characteristic.name == "brightness")
        #expect(characteristic.format.kind == .uint8)
        #expect(characteristic.flags == [.read, .write, .notify])
        #expect(characteristic.value == [10])
    }

    @Test("a characteristic's description becomes its user description")
    func description() throws {
        let config = try parse(Self.lamp + "\ndescription = \"Brightness\"\n")

        #expect(config.services["lamp"]?.service.characteristics.first?.userDescription == "Brightness")
    }

    @Test("an advertisement that offers a service carries its UUID")
    func advertisementOffersService() throws {
        let config = try parse("[service.power.battery]\nlevel = 80\n[advertisement.gw]\nlocal_name = \"G\"\nservices = [\"power\"]\n")

        #expect(config.advertisements["gw"]?.advertisement.serviceUUIDs == [BluetoothUUID(0x180F)])
    }

    @Test("an advertisement naming a service that is not defined is refused with the line")
    func unknownOfferedService() {
        #expect(error("[advertisement.gw]\nlocal_name = \"G\"\nservices = [\"power\"]\n")
            == "test.toml:3: advertisement.gw.services: no service named \"power\"; define it in a [service.NAME] table")
    }

    @Test("a value outside the preset's range is refused with the line and key")
    func batteryOutOfRange() {
        #expect(error("[service.power.battery]\nlevel = 101\n")
            == "test.toml:2: service.power.battery.level: is 101; it must be between 0 and 100")
    }

    @Test("a characteristic without a format is refused, naming the key")
    func missingFormat() {
        let text = Self.lamp.replacingOccurrences(of: "format = \"uint8\"\n", with: "")
        #expect(error(text)?.contains("service.lamp.characteristic.brightness.format: missing") == true)
    }

    @Test("an unknown flag is refused with the known ones")
    func unknownFlag() {
        let text = Self.lamp.replacingOccurrences(of: "\"notify\"]", with: "\"shout\"]")
        #expect(error(text) == "test.toml:6: service.lamp.characteristic.brightness.flags: \"shout\" is not a flag; use read, write, write-without-response, notify, indicate")
    }

    @Test("a characteristic's security is the link it asks for, encrypted for a writable one unless the file says", arguments: [
        ("", GATTSecurity.encrypted), ("\nsecurity = \"none\"", .none), ("\nsecurity = \"encrypted\"", .encrypted),
        ("\nsecurity = \"authenticated\"", .authenticated), ("\nsecurity = \"secure\"", .secure),
    ])
    func security(line: String, expected: GATTSecurity) throws {
        let config = try parse(Self.lamp + line + "\n")

        #expect(config.services["lamp"]?.service.characteristics.first?.security == expected)
    }

    @Test("a characteristic no central can change needs no encryption unless the file says")
    func readOnlyIsOpen() throws {
        let config = try parse(Self.lamp.replacingOccurrences(of: "[\"read\", \"write\", \"notify\"]", with: "[\"read\", \"notify\"]") + "\n")

        #expect(config.services["lamp"]?.service.characteristics.first?.security == GATTSecurity.none)
    }

    @Test("an unknown security level is refused with the known ones")
    func unknownSecurity() {
        #expect(error(Self.lamp + "\nsecurity = \"paired\"\n")
            == "test.toml:8: service.lamp.characteristic.brightness.security: \"paired\" is not a security level; use none, encrypted, authenticated, secure")
    }

    @Test("a secret a central could read back is refused, naming the flags that would")
    func readableSecret() {
        #expect(error(Self.lamp + "\nsecret = true\n")
            == "test.toml:8: service.lamp.characteristic.brightness.secret: is true, but flags give notify, read: a central could read back what is kept secret; drop those flags or secret")
    }

    @Test("a write-only characteristic is a secret, with secret = true or without")
    func writeOnlyIsSecret() throws {
        let writeOnly = Self.lamp.replacingOccurrences(of: "[\"read\", \"write\", \"notify\"]", with: "[\"write\"]")

        let plain = try parse(writeOnly)
        let declared = try parse(writeOnly + "\nsecret = true\n")

        #expect(plain.services["lamp"]?.service.characteristics.first?.isSecret == true)
        #expect(declared.services["lamp"]?.service.characteristics.first?.isSecret == true)
        #expect(plain.services["lamp"]?.shownValues == [:])
    }

    @Test("a characteristic with an empty name is refused, as any name the file gives")
    func emptyCharacteristicName() {
        let text = Self.lamp.replacingOccurrences(of: "characteristic.brightness]", with: "characteristic.\"\"]")
        #expect(error(text)?.contains("names may use letters, digits, '-' and '_' (1 to 64 characters)") == true)
    }

    @Test("a service and an advertisement of the same name are refused")
    func sharedName() {
        #expect(error("[service.x.battery]\nlevel = 1\n[advertisement.x]\nlocal_name = \"G\"\n")?.contains("a service is named x too") == true)
    }

    @Test("a value not of its characteristic's format is named escaped: its control characters never reach a terminal or the journal", arguments: [
        "format = \"hex\"\nflags = [\"read\"]\nvalue = \"\\u001b[2Jzz\"",
        "format = \"utf8\"\nflags = [\"read\"]\nvalue = [\"\\u001b[2J\"]",
    ])
    func badValueEscaped(_ characteristic: String) throws {
        let text = ConfigFixtures.lamp + "[service.lamp.characteristic.c]\nuuid = \"6e400009-b5a3-f393-e0a9-e50e24dcca9e\"\n" + characteristic + "\n"

        let refusal = try #require(error(text))

        #expect(!refusal.unicodeScalars.contains { $0.value == 0x1B }, "\(refusal)")
        #expect(refusal.contains("\\u{1B}[2J"), "\(refusal)")
    }

    @Test("a value set at run time is checked against the characteristic's format")
    func applyingChecksFormat() throws {
        let service = try #require(try parse(Self.lamp).services["lamp"])

        let changed = try service.applying(["brightness": .string("42")], name: "lamp")

        #expect(changed.service.characteristics[0].value == [42])
        #expect(throws: ConfigError.self) { try service.applying(["brightness": .string("256")], name: "lamp") }
        #expect(throws: ConfigError.self) { try service.applying(["colour": .string("1")], name: "lamp") }
    }
}
