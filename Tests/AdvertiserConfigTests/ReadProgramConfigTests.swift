import AdvertiserConfig
import Foundation
import Peripheral
import TestSupport
import Testing

/// `read`, `max_age`, `read_timeout` and `notify_every`: a characteristic whose value a program
/// gives when a central asks.
@Suite("Characteristics read from a program, in the config file")
struct ReadProgramConfigTests: ReadsConfigText {
    static let pi = String(ConfigFixtures.piTemperature("/usr/local/bin/cpu-temp").dropLast())

    @Test("read names the program; the characteristic has no value until it runs")
    func readProgram() throws {
        let config = try parse(Self.pi + "\nread_timeout = 0.5\nnotify_every = 30\n")

        let service = try #require(config.services["pi"])
        #expect(service.programs["temperature"] == ReadProgram(
            command: ["/usr/local/bin/cpu-temp"], maxAge: .seconds(2), timeout: .milliseconds(500), notifyEvery: .seconds(30)))
        #expect(service.service.characteristics.first?.value == [])
        #expect(service.values["temperature"] == nil)
    }

    @Test("max_age and read_timeout have defaults: 1 s and 5 s")
    func defaults() throws {
        let config = try parse(Self.pi.replacingOccurrences(of: "\nmax_age = 2", with: "") + "\n")

        let program = try #require(config.services["pi"]?.programs["temperature"])
        #expect(program.maxAge == .seconds(1))
        #expect(program.timeout == .seconds(5))
        #expect(program.notifyEvery == nil)
    }

    @Test("read may be a command as an array: the program and the config's own arguments")
    func readCommand() throws {
        let text = Self.pi.replacingOccurrences(of: "read = \"/usr/local/bin/cpu-temp\"", with: "read = [\"/usr/local/bin/sensor\", \"cpu\"]")

        #expect(try parse(text + "\n").services["pi"]?.programs["temperature"]?.command == ["/usr/local/bin/sensor", "cpu"])
    }

    @Test("each mistake is refused in one line naming its key", arguments: [
        ("read = \"/usr/local/bin/cpu-temp\"", "read = \"cpu-temp\"",
         "test.toml:9: service.pi.characteristic.temperature.read: must be an absolute path to a program, or a command as an array starting with one (e.g. [\"/usr/local/bin/sensor\", \"cpu\"])"),
        ("flags = [\"read\", \"notify\"]", "flags = [\"read\", \"write\"]",
         "test.toml:8: service.pi.characteristic.temperature.flags: has write, but the value is read from a program: a central's write would be lost at the next read; drop the write flags or read"),
        ("max_age = 2", "max_age = 0",
         "test.toml:10: service.pi.characteristic.temperature.max_age: is 0 s; it must be between 0.1 and 86400"),
        ("max_age = 2", "read_timeout = 30",
         "test.toml:10: service.pi.characteristic.temperature.read_timeout: is 30 s; it must be between 0.1 and 20"),
        ("max_age = 2", "max_age = \"2s\"",
         "test.toml:10: service.pi.characteristic.temperature.max_age: must be a number of seconds, not string"),
        ("flags = [\"read\", \"notify\"]\n", "flags = [\"read\"]\nnotify_every = 5\n",
         "test.toml:9: service.pi.characteristic.temperature.notify_every: needs notify or indicate in flags: only subscribed centrals are sent the values it reads"),
        ("read = \"/usr/local/bin/cpu-temp\"", "value = 20",
         "test.toml:10: service.pi.characteristic.temperature.max_age: is for a characteristic read from a program; give read = \"/path/to/program\" too"),
    ])
    func refused(replacing: String, with: String, message: String) {
        #expect(error(Self.pi.replacingOccurrences(of: replacing, with: with) + "\n") == message)
    }

    @Test("a characteristic read from a program is not set: set names the program")
    func setRefused() throws {
        let service = try #require(try parse(Self.pi + "\n").services["pi"])

        let refusal = #expect(throws: ConfigError.self) { try service.applying(["temperature": .double(30)], name: "pi") }

        #expect(refusal?.description.hasSuffix("service.pi.temperature: is read from \"/usr/local/bin/cpu-temp\" when a central asks; it is not set") == true)
    }

    @Test("a program's output is read as the characteristic's format: trimmed for numbers, its last line end dropped for text")
    func outputParsed() throws {
        let sint16 = GATTFormat(.sint16, exponent: -2)

        #expect(try ReadProgram.value(of: Array(" 21.5\n".utf8), format: sint16).1 == [0x66, 0x08])
        #expect(try ReadProgram.value(of: Array("two words \n".utf8), format: GATTFormat(.utf8)).1 == Array("two words ".utf8))
        #expect(try ReadProgram.value(of: Array("0a0b\n".utf8), format: GATTFormat(.hex)).1 == [0x0A, 0x0B])
    }

    @Test("output that is no value of the format says what the format wants, never the output", arguments: [
        ("101", GATTFormat(.uint8, range: 0...100), "its output (3 bytes, not shown) is not a number for uint8 (0 to 100)"),
        ("hunter2", GATTFormat(.uint8), "its output (7 bytes, not shown) is not a number for uint8"),
        ("zz", GATTFormat(.hex), "its output (2 bytes, not shown) is not hex digits for hex (at most 512 bytes)"),
    ])
    func outputRefused(output: String, format: GATTFormat, message: String) {
        let error = #expect(throws: GATTReadError.self) { try ReadProgram.value(of: Array(output.utf8), format: format) }

        #expect(error?.description == message)
    }
}
