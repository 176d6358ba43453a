import AdvertiserControl
import ArgumentParser
import Peripheral

extension Bleadvctl {
    struct Event: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a BTHome sensor's button or dimmer event, as a Shelly BLU Button does.",
            discussion: """
                The sensor declares its buttons and dimmers in the config file (buttons = 2, \
                dimmers = 1 in its [advertisement.NAME.bthome] table). The event goes on air at \
                once, in every packet for the sensor's event_seconds (1 s unless set) with one \
                packet id, so that Home Assistant reports it once however many packets it \
                hears; then the packets carry the measurements alone again. An encrypted \
                sensor's events are encrypted as its readings are.

                EVENT is button=WHAT (the first button) or button.N=WHAT, WHAT one of press, \
                double_press, triple_press, long_press, long_double_press, long_triple_press, \
                hold_press; or dimmer=STEPS or dimmer.N=STEPS, +1 to +255 turned right, -1 to \
                -255 left. Several in one call go out in one packet (two buttons pressed at \
                once). Events given while one is on air wait in order, each on air for its own \
                burst: none is merged or dropped; a sensor with 32 waiting refuses more (exit 2).

                Example, from a GPIO button's script (gpiomon, or a systemd path unit):
                  bleadvctl event remote button=press
                  bleadvctl event remote button.2=long_press
                  bleadvctl event remote dimmer=-3

                Exit status 2 for an event the sensor cannot send (no such button, an unknown \
                event, the advertisement off). Members of group bleadvd may send events.
                """)
        @OptionGroup var bus: BusOptions
        @Argument(help: ArgumentHelp("The BTHome sensor (its advertisement's name).", valueName: "name"))
        var name: String
        @Argument(help: ArgumentHelp("What happened: button=press, button.2=long_press, dimmer=+3.", valueName: "event"))
        var events: [String] = []

        func validate() throws {
            for pair in events where !Set.isPair(pair) {
                throw ValidationError("\(Untrusted.quoted(pair)) is not KEY=VALUE; e.g. button=press or dimmer=+3")
            }
            if events.isEmpty { throw ValidationError("no event given; e.g. button=press, button.2=long_press or dimmer=-3") }
            try Set.changes(events)
        }

        func run() throws {
            let given = try Set.changes(events)
            let queued = try withDaemon(bus) { try $0.event(name, given) }
            let seconds = GATTFormat.shown(queued.burstSeconds)
            let shown = given.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            if queued.ahead == 0 {
                print("\(Untrusted.shown(name, limit: 64)): \(Untrusted.shown(shown, limit: 200)) on air for \(seconds) s")
            } else {
                print("\(Untrusted.shown(name, limit: 64)): \(Untrusted.shown(shown, limit: 200)) on air after \(queued.ahead) event(s) before it, each \(seconds) s")
            }
        }
    }
}
