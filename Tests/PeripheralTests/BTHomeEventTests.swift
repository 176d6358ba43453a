import Peripheral
import Testing

/// BTHome's button and dimmer events, against bthome.io's examples: a long press is `3A04`, a
/// dimmer turned left by 3 steps `3C0103`.
@Suite("BTHome events")
struct BTHomeEventTests {
    static func sensor(buttons: Int = 0, dimmers: Int = 0, values: [String: Double] = [:]) -> BTHome {
        var sensor = BTHome(values: values, packetID: 9)
        sensor.buttons = buttons
        sensor.dimmers = dimmers
        return sensor
    }

    @Test("a sensor with buttons or dimmers asks for a 100-150 ms interval, so that a burst of a second goes out several times; one without keeps BlueZ's default")
    func eventsAskForAShortInterval() throws {
        let remote = try Self.sensor(dimmers: 1).advertisement()
        let thermometer = try Self.sensor(values: ["temperature": 21.5]).advertisement()

        #expect([remote.minInterval, remote.maxInterval] == [100, 150])
        #expect([thermometer.minInterval, thermometer.maxInterval] == [nil, nil])
    }

    @Test("a long press of the only button is object 0x3A with 0x04, after the packet id")
    func longPress() throws {
        var sensor = Self.sensor(buttons: 1)
        sensor.event = try sensor.event(from: ["button": "long_press"])

        #expect(try sensor.objectBytes() == [0x00, 9, 0x3A, 0x04])
    }

    @Test("a dimmer turned left by 3 steps is 0x3C 01 03, right by 2 is 0x3C 02 02")
    func dimmerSteps() throws {
        var sensor = Self.sensor(dimmers: 2)
        sensor.event = try sensor.event(from: ["dimmer.1": "-3", "dimmer.2": "+2"])

        #expect(try sensor.objectBytes() == [0x00, 9, 0x3C, 0x01, 0x03, 0x3C, 0x02, 0x02])
    }

    @Test("the second of two buttons pressed: the first is there as none, so receivers number them by place")
    func secondButton() throws {
        var sensor = Self.sensor(buttons: 2)
        sensor.event = try sensor.event(from: ["button.2": "hold_press"])

        #expect(try sensor.objectBytes() == [0x00, 9, 0x3A, 0x00, 0x3A, 0x80])
    }

    @Test("event objects go between the measurements by object id: battery 0x01 before, count_16 0x3D after")
    func orderAmongMeasurements() throws {
        var sensor = Self.sensor(buttons: 1, values: ["battery": 80, "count_16": 2])
        sensor.event = try sensor.event(from: ["button": "press"])

        #expect(try sensor.objectBytes() == [0x00, 9, 0x01, 80, 0x3A, 0x01, 0x3D, 0x02, 0x00])
    }

    @Test("between events the packets carry the measurements alone")
    func noEventNoObjects() throws {
        let sensor = Self.sensor(buttons: 2, values: ["battery": 80])

        #expect(try sensor.objectBytes() == [0x00, 9, 0x01, 80])
    }

    @Test("an event the sensor cannot send is refused, saying why", arguments: [
        (["button.3": "press"], "\"button.3\": the sensor has 2 buttons, button.1 to button.2"),
        (["button": "squeeze"], "button: \"squeeze\" is no button event; use press, double_press, triple_press, long_press, long_double_press, long_triple_press, hold_press"),
        (["button": "none"], "button: \"none\" is no button event"),
        (["dimmer": "+3"], "dimmer: the sensor has no dimmers; declare them with dimmers = 1"),
        (["temperature": "3"], "\"temperature\" is no event; give button, button.N, dimmer or dimmer.N"),
        (["button.0": "press"], "\"button.0\": the sensor has 2 buttons"),
    ])
    func refusals(given: [String: String], message: String) throws {
        let sensor = Self.sensor(buttons: 2)

        let error = #expect(throws: PeripheralError.self) { try sensor.event(from: given) }

        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
    }

    @Test("a dimmer's steps are 1 to 255 either way; 0, 256 and words are refused", arguments: ["0", "+256", "-0", "three", "", "+", "1.5"])
    func dimmerRange(text: String) {
        #expect(BTHome.DimmerEvent(text: text) == nil)
    }

    @Test("an event reads back as it is given, those that did nothing left out")
    func description() throws {
        let sensor = Self.sensor(buttons: 2, dimmers: 1)

        let event = try sensor.event(from: ["button.2": "double_press", "dimmer": "-4"])

        #expect(event.description == "button.2=double_press dimmer=-4")
    }
}
