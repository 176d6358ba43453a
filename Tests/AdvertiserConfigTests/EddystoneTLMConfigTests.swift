import AdvertiserConfig
import Peripheral
import Testing

@Suite("Eddystone-TLM in the config")
struct EddystoneTLMConfigTests: ReadsConfigText {
    /// The advertisement `telemetry` of the text.
    func telemetry(_ text: String) throws -> ConfiguredAdvertisement {
        try #require(try parse(text).advertisements["telemetry"])
    }

    @Test("an eddystone_tlm table is a TLM frame with its battery and temperature, counters at zero, brought up to date every 10 s unless given")
    func preset() throws {
        let configured = try telemetry("[advertisement.telemetry.eddystone_tlm]\nbattery_mv = 3000\ntemperature = 21.5\n")

        #expect(configured.telemetry == .init(frame: EddystoneTLM(batteryMillivolts: 3000, temperature: 21.5), every: .seconds(10)))
        #expect(configured.advertisement.serviceData.first?.data == EddystoneTLM(batteryMillivolts: 3000, temperature: 21.5).frame)
    }

    @Test("every key may be left out: an empty table sends not-measured and its counters")
    func emptyTable() throws {
        let configured = try telemetry("[advertisement.telemetry]\neddystone_tlm = {}\n")

        #expect(configured.telemetry?.frame == EddystoneTLM())
    }

    @Test("set gives an empty table its first value: the temperature goes into the frame")
    func setOnEmptyTable() throws {
        let configured = try telemetry("[advertisement.telemetry]\neddystone_tlm = {}\n")

        let changed = try ConfigParser.applying(["temperature": .integer(20)], to: configured, name: "telemetry")

        #expect(changed.telemetry?.frame.temperature == 20)
    }

    @Test("the advertisement built with counters carries them; without, the frame as configured")
    func countersFilledIn() throws {
        let configured = try telemetry("[advertisement.telemetry.eddystone_tlm]\nupdate_seconds = 7.5\n")
        let counters = EddystoneTLM.Counters(advertisingCount: 7, uptimeTenths: 12_345)

        let built = try configured.advertisement(packetID: 0, counters: counters)

        #expect(configured.telemetry?.every == .milliseconds(7500))
        #expect(built.serviceData.first?.data == EddystoneTLM(counters: counters).frame)
    }

    @Test("config errors name the key and what is wrong", arguments: [
        ("[advertisement.telemetry.eddystone_tlm]\ntemperature = 130\n",
         "test.toml:2: advertisement.telemetry.eddystone_tlm.temperature: is 130 °C; it must be between -128 and 127.99609375 °C"),
        ("[advertisement.telemetry.eddystone_tlm]\nbattery_mv = 0\n",
         "test.toml:2: advertisement.telemetry.eddystone_tlm.battery_mv: is 0; it must be between 1 and 65535"),
        ("[advertisement.telemetry.eddystone_tlm]\nbattery_mv = 3.3\n",
         "test.toml:2: advertisement.telemetry.eddystone_tlm.battery_mv: must be an integer, not floating-point number"),
        ("[advertisement.telemetry.eddystone_tlm]\nupdate_seconds = 0.5\n",
         "test.toml:2: advertisement.telemetry.eddystone_tlm.update_seconds: is 0.5 s; it must be between 5 and 3600"),
        ("[advertisement.telemetry.eddystone_tlm]\nuptime = 5\n",
         "test.toml:2: advertisement.telemetry.eddystone_tlm.uptime: unknown key; known keys: battery_mv, temperature, update_seconds"),
    ])
    func errors(text: String, message: String) {
        #expect(error(text) == message)
    }

    @Test("set changes the temperature in the frame")
    func setTemperature() throws {
        let configured = try telemetry("[advertisement.telemetry.eddystone_tlm]\ntemperature = 21.5\n")

        let changed = try ConfigParser.applying(["temperature": .double(22.25)], to: configured, name: "telemetry")

        #expect(changed.telemetry?.frame.temperature == 22.25)
    }

    @Test("a member of group bleadvd cannot put a value the frame cannot carry on air: set checks it as the file is", arguments: [
        ("temperature", ConfigValue.double(1e308), "advertisement.telemetry.eddystone_tlm.temperature: is 1e+308 °C; it must be between -128 and 127.99609375 °C"),
        ("battery_mv", ConfigValue.integer(70_000), "advertisement.telemetry.eddystone_tlm.battery_mv: is 70000; it must be between 1 and 65535"),
        ("temperature", ConfigValue.string("hot"), "advertisement.telemetry.eddystone_tlm.temperature: must be a number, not string"),
    ])
    func hostileSetRefused(key: String, value: ConfigValue, message: String) throws {
        let configured = try telemetry("[advertisement.telemetry.eddystone_tlm]\ntemperature = 21.5\n")

        var refusal: String?
        do {
            _ = try ConfigParser.applying([key: value], to: configured, name: "telemetry")
        } catch {
            refusal = error.description
        }

        #expect(refusal == message)
    }

    @Test("update_seconds is the timer's, not a value: set refuses it")
    func updateSecondsNotSettable() throws {
        let configured = try telemetry("[advertisement.telemetry.eddystone_tlm]\nupdate_seconds = 5\n")

        var message: String?
        do {
            _ = try ConfigParser.applying(["update_seconds": .integer(1)], to: configured, name: "telemetry")
        } catch {
            message = error.description
        }

        #expect(message == "advertisement.telemetry.update_seconds: cannot be set at run time; change it in the config file and reload")
    }
}
