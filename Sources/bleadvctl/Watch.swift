import AdvertiserControl
import ArgumentParser
import DBus
import Events
import Peripheral
#if canImport(Glibc)
import Glibc
#endif

extension Bleadvctl {
    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print what happens, one line per event, until interrupted.",
            discussion: """
                Events: a central wrote a GATT characteristic (written SERVICE CHARACTERISTIC \
                VALUE CENTRAL), an advertisement or service changed state (state NAME STATE), \
                values went on air (values NAME KEY=VALUE...), a central connected \
                (connected ADDRESS ADAPTER), its link's ATT MTU became known or changed, or a \
                notification went out cut to what the MTU carries (link ADDRESS ADAPTER mtu N \
                [cut SERVICE.CHARACTERISTIC,...]), a central subscribed to a characteristic's \
                notifications (subscribed SERVICE.CHARACTERISTIC; BlueZ does not say which \
                central) or none is subscribed any longer (unsubscribed SERVICE.CHARACTERISTIC), \
                or its link ended (disconnected ADDRESS \
                ADAPTER [REASON], the reason when bleadvd ended it). A pairing window's events go to \
                the bleadvctl pair that opened it alone. A write is printed only when \
                bleadvd took it: it fit the characteristic's format. With --json each line is \
                one JSON object ({"event": "written", "service", "characteristic", "value", \
                "central"}). Text is escaped; lines are written as they happen.

                Links, subscriptions and writes (each names its central: who is connected is \
                the owner's business), and the values of secured characteristics (security is \
                not "none"), are shown to root and to group bleadvd alone: the bus gives them \
                to no one else.

                Example, a script that acts on a phone's write:
                  bleadvctl watch --json | while read -r line; do ...; done

                bleadvd never runs anything itself. A characteristic that takes writes takes \
                them only from a bonded central unless its security is "none".
                """)
        @Flag(help: "Print one JSON object per line.")
        var json = false

        func run() throws {
            let json = json
            try runOnEventLoop(exitingWith: Failure.notRunning) { loop in try await Self.watch(json: json, on: loop) }
        }

        /// Prints each signal of the control API until the connection ends. A subscriber (root,
        /// group bleadvd) is sent values and writes whole, to it alone, and skips their
        /// broadcasts, which leave secured values out.
        static func watch(json: Bool, on loop: EventLoop) async throws {
            let connection = try await connectToSystemBus(on: loop)
            // Subscribed before the rules are in place: what comes after them comes once.
            let subscribed = try await subscribe(on: connection)
            let rules = WatchFormat.signals.map {
                DBusMatchRule(sender: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface, member: $0.name)
            }
            let signals = try await connection.signals(matching: rules)
            // Values and writes come whole to a subscriber, to it alone: their broadcasts are skipped.
            let whole = [ControlAPI.ValuesChanged.name, ControlAPI.Written.name]
            for await message in signals {
                if subscribed, message.destination == nil, whole.contains(message.member ?? "") { continue }
                guard let line = WatchFormat.line(message, json: json) else { continue }
                try emit(line + "\n")
            }
            throw Failure(code: Failure.failed, message: "the system bus connection ended")
        }

        /// Asks bleadvd for every event whole; false when it is not this user's to have. Throws
        /// (exit 3) when bleadvd is not running: a watch of no daemon would wait for good.
        static func subscribe(on connection: DBusConnection) async throws(Failure) -> Bool {
            do {
                _ = try await connection.call(
                    destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface,
                    member: ControlAPI.Method.subscribe.name, expecting: "")
                return true
            } catch let error as DBusError where error.name == .serviceUnknown || error.name == .nameHasNoOwner {
                throw Failure(dbus: error)
            } catch let error as DBusError where error.name == .accessDenied || error.name == ControlAPI.errorName(.accessDenied) {
                printError("links, writes and the values of secured characteristics are left out: they are shown to root and group bleadvd alone")
                return false
            } catch let error as DBusError {
                // A limit met (four a user): said, as bleadvd words it.
                printError("the values of secured characteristics are left out: \(error.message)")
                return false
            } catch {
                return false
            }
        }
    }
}

/// `bleadvctl watch`'s lines.
enum WatchFormat {
    /// The signals it prints, each decoded by its declaration (`ControlSignal`); a pairing
    /// window's events are sent to its opener alone, never this command's to print.
    static let signals: [any Watched.Type] = [
        ControlAPI.StateChanged.self, ControlAPI.ValuesChanged.self, ControlAPI.Written.self, ControlAPI.Connected.self,
        ControlAPI.Disconnected.self, ControlAPI.LinkChanged.self, ControlAPI.Subscription.self,
    ]

    /// One line for a signal of the control API; nil for one it does not print or a malformed one.
    static func line(_ message: DBusMessage, json: Bool) -> String? {
        for signal in signals {
            if let line = line(of: signal, message, json: json) { return line }
        }
        return nil
    }

    /// The line of `message` when it is a `Signal`.
    private static func line<Signal: Watched>(of signal: Signal.Type, _ message: DBusMessage, json: Bool) -> String? {
        guard message.member == Signal.name, let payload = Signal(body: message.body) else { return nil }
        return json ? payload.json : payload.text
    }

    /// A value as one field of a text line: as it is when it is one word, else quoted, so that
    /// a space, a quote or a backslash in it cannot make it look like more fields.
    static func field(_ value: String) -> String {
        value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "\\" })
            ? Untrusted.quoted(value, limit: 512) : Untrusted.escaped(value)
    }
}

/// A signal `bleadvctl watch` prints: its text line and its JSON object, from its payload.
protocol Watched: ControlSignal {
    /// Its text line: the event's word, then its fields, escaped.
    var text: String { get }
    /// Its JSON object, on one line.
    var json: String { get }
}

extension ControlAPI.StateChanged: Watched {
    var text: String { "state \(Untrusted.escaped(name)) \(Untrusted.escaped(state))" }
    var json: String { "{\"event\": \"state\", \"name\": \(StatusFormat.quote(name)), \"state\": \(StatusFormat.quote(state))}" }
}

extension ControlAPI.ValuesChanged: Watched {
    /// The values by key, as the daemon sends them.
    private var sorted: [(key: String, value: String)] { values.sorted { $0.key < $1.key } }
    var text: String { (["values", Untrusted.escaped(name)] + sorted.map { "\(Untrusted.escaped($0.key))=\(WatchFormat.field($0.value))" }).joined(separator: " ") }
    var json: String {
        "{\"event\": \"values\", \"name\": \(StatusFormat.quote(name)), \"values\": {"
            + sorted.map { "\(StatusFormat.quote($0.key)): \(StatusFormat.quote($0.value))" }.joined(separator: ", ") + "}}"
    }
}

extension ControlAPI.Written: Watched {
    var text: String {
        let shown = switch value {
        case .number(let number)?: GATTFormat.shown(number)
        case .text(let string)?: Untrusted.quoted(string, limit: 512)
        case .bytes(let bytes)?: Hex.encode(bytes)
        case nil: ""
        }
        return ["written", Untrusted.escaped(service), Untrusted.escaped(characteristic), shown, central.isEmpty ? "-" : Untrusted.escaped(central)]
            .joined(separator: " ")
    }
    var json: String {
        let shown = switch value {
        case .number(let number)?: StatusFormat.number(number)
        case .text(let string)?: StatusFormat.quote(string)
        case .bytes(let bytes)?: StatusFormat.quote(Hex.encode(bytes))
        case nil: StatusFormat.quote("")
        }
        return "{\"event\": \"written\", \"service\": \(StatusFormat.quote(service)), \"characteristic\": \(StatusFormat.quote(characteristic)), \"value\": \(shown), \"central\": \(StatusFormat.quote(central))}"
    }
}

extension ControlAPI.Connected: Watched {
    var text: String { "connected \(Untrusted.escaped(central)) \(Untrusted.escaped(adapter))" }
    var json: String { "{\"event\": \"connected\", \"central\": \(StatusFormat.quote(central)), \"adapter\": \(StatusFormat.quote(adapter))}" }
}

extension ControlAPI.Disconnected: Watched {
    var text: String { "disconnected \(Untrusted.escaped(central)) \(Untrusted.escaped(adapter))" + (reason.isEmpty ? "" : " " + WatchFormat.field(reason)) }
    var json: String {
        "{\"event\": \"disconnected\", \"central\": \(StatusFormat.quote(central)), \"adapter\": \(StatusFormat.quote(adapter)), \"reason\": \(StatusFormat.quote(reason))}"
    }
}

extension ControlAPI.LinkChanged: Watched {
    var text: String {
        "link \(Untrusted.escaped(central)) \(Untrusted.escaped(adapter)) mtu \(mtu)" + (cut.isEmpty ? "" : " cut " + cut.map(Untrusted.escaped).joined(separator: ","))
    }
    var json: String {
        "{\"event\": \"link\", \"central\": \(StatusFormat.quote(central)), \"adapter\": \(StatusFormat.quote(adapter)), \"mtu\": \(mtu), \"cut\": ["
            + cut.map(StatusFormat.quote).joined(separator: ", ") + "]}"
    }
}

extension ControlAPI.Subscription: Watched {
    /// `subscribed` or `unsubscribed`.
    private var event: String { subscribed ? "subscribed" : "unsubscribed" }
    var text: String {
        "\(event) \(Untrusted.escaped(service)).\(Untrusted.escaped(characteristic))" + (central.isEmpty ? "" : " by \(Untrusted.escaped(central))")
    }
    var json: String {
        "{\"event\": \"\(event)\", \"service\": \(StatusFormat.quote(service)), \"characteristic\": \(StatusFormat.quote(characteristic)), "
            + "\"central\": \(central.isEmpty ? "null" : StatusFormat.quote(central))}"
    }
}
