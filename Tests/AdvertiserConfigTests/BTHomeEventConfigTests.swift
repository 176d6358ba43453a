import AdvertiserConfig
import Peripheral
import Testing

@Suite("BTHome buttons and dimmers in the config")
struct BTHomeEventConfigTests: ReadsConfigText {
    /// The advertisement `remote` of the text.
    func remote(_ text: String) throws -> ConfiguredAdvertisement {
        try #require(try parse(text).advertisements["remote"])
    }

    @Test("a remote of two buttons and no measurement is a sensor whose packets carry the packet id alone between events")
    func buttonsOnly() throws {
        let configured = try remote("[advertisement.remote.bthome]\nbuttons = 2\n")

        #expect(configured.bthome?.buttons == 2)
        #expect(configured.advertisement.serviceData.first?.data == [0x40, 0x00, 0x00])
    }

    @Test("event_seconds is how long an event's packets stay on air; 1 s unless given")
    func eventSeconds() throws {
        let standard = try remote("[advertisement.remote.bthome]\nbuttons = 1\n")
        let given = try remote("[advertisement.remote.bthome]\nbuttons = 1\nevent_seconds = 0.5\n")

        #expect(standard.bthome?.eventBurst == .seconds(1))
        #expect(given.bthome?.eventBurst == .milliseconds(500))
    }

    @Test("a sensor whose event packet would pass 31 bytes is refused at load, with the count", arguments: [
        "[advertisement.remote.bthome]\nbuttons = 8\ndimmers = 4\n",
    ])
    func tooLongWithEvents(text: String) {
        let message = error(text)

        #expect(message?.contains("advertisement.remote: with an event, ") == true, "\(message ?? "accepted")")
        #expect(message?.contains("8 button(s), 4 dimmer(s)") == true, "\(message ?? "accepted")")
    }

    @Test("config errors name the key and what is wrong", arguments: [
        ("[advertisement.remote.bthome]\nbuttons = 9\n", "test.toml:2: advertisement.remote.bthome.buttons: is 9; it must be between 0 and 8"),
        ("[advertisement.remote.bthome]\ndimmers = \"one\"\n", "test.toml:2: advertisement.remote.bthome.dimmers: must be an integer, not string (\"one\" is a string: write a number without quotes)"),
        ("[advertisement.remote.bthome]\ntemperature = 20\nevent_seconds = 1\n", "test.toml:3: advertisement.remote.bthome.event_seconds: the sensor sends no events; declare buttons = N or dimmers = N"),
        ("[advertisement.remote.bthome]\nbuttons = 1\nevent_seconds = 30\n", "test.toml:3: advertisement.remote.bthome.event_seconds: is 30 s; it must be between 0.1 and 10"),
        ("[advertisement.remote.bthome]\nbuttons = 0\n", "test.toml:1: advertisement.remote.bthome: has no measurement; give at least one, e.g. temperature = 21.5, or buttons = 1 for a button"),
    ])
    func errors(text: String, message: String) {
        #expect(error(text) == message)
    }

    @Test("buttons, dimmers and event_seconds are what the sensor is, not values: set refuses them", arguments: ["buttons", "dimmers", "event_seconds"])
    func declarationsNotSettable(key: String) throws {
        let configured = try remote("[advertisement.remote.bthome]\nbuttons = 2\ndimmers = 1\n")

        var message: String?
        do {
            _ = try ConfigParser.applying([key: .integer(3)], to: configured, name: "remote")
        } catch {
            message = error.description
        }

        #expect(message == "advertisement.remote.\(key): cannot be set at run time; change it in the config file and reload")
    }
}
