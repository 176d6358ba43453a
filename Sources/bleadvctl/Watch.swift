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
            let rules = ControlAPI.Signal.allCases.filter { $0 != .pairing }.map {
                DBusMatchRule(sender: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface, member: $0.name)
            }
            let signals = try await connection.signals(matching: rules)
            for await message in signals {
                // Values and writes come whole to a subscriber, to it alone: their broadcasts are skipped.
                let whole = [ControlAPI.Signal.valuesChanged.name, ControlAPI.Signal.written.name]
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
    /// One line for a signal of the control API; nil for one it does not know or a malformed one.
    static func line(_ message: DBusMessage, json: Bool) -> String? {
        let body = message.body
        switch message.member.flatMap(ControlAPI.Signal.init) {
        case .written?:
            guard body.count == 4, let service = body[0].string, let characteristic = body[1].string,
                  let value = body[2].variantValue, let central = body[3].string else { return nil }
            let text: String, jsonValue: String
            switch value {
            case .double(let number):
                text = GATTFormat.shown(number)
                jsonValue = StatusFormat.number(number)
            case .string(let string):
                text = Untrusted.quoted(string, limit: 512)
                jsonValue = StatusFormat.quote(string)
            default:
                text = Hex.encode(value.bytes ?? [])
                jsonValue = StatusFormat.quote(text)
            }
            return json
                ? "{\"event\": \"written\", \"service\": \(StatusFormat.quote(service)), \"characteristic\": \(StatusFormat.quote(characteristic)), \"value\": \(jsonValue), \"central\": \(StatusFormat.quote(central))}"
                : ["written", Untrusted.escaped(service), Untrusted.escaped(characteristic), text, central.isEmpty ? "-" : Untrusted.escaped(central)].joined(separator: " ")
        case .stateChanged?:
            guard body.count == 2, let name = body[0].string, let state = body[1].string else { return nil }
            return json
                ? "{\"event\": \"state\", \"name\": \(StatusFormat.quote(name)), \"state\": \(StatusFormat.quote(state))}"
                : "state \(Untrusted.escaped(name)) \(Untrusted.escaped(state))"
        case .valuesChanged?:
            guard body.count == 2, let name = body[0].string else { return nil }
            let values = (body[1].dictionaryEntries ?? []).compactMap { entry -> (String, String)? in
                guard let key = entry.key.string, let value = entry.value.string else { return nil }
                return (key, value)
            }
            return json
                ? "{\"event\": \"values\", \"name\": \(StatusFormat.quote(name)), \"values\": {" + values.map { "\(StatusFormat.quote($0.0)): \(StatusFormat.quote($0.1))" }.joined(separator: ", ") + "}}"
                : (["values", Untrusted.escaped(name)] + values.map { "\(Untrusted.escaped($0.0))=\(field($0.1))" }).joined(separator: " ")
        case .connected?:
            guard body.count == 2, let central = body[0].string, let adapter = body[1].string else { return nil }
            return json
                ? "{\"event\": \"connected\", \"central\": \(StatusFormat.quote(central)), \"adapter\": \(StatusFormat.quote(adapter))}"
                : "connected \(Untrusted.escaped(central)) \(Untrusted.escaped(adapter))"
        case .disconnected?:
            guard body.count == 3, let central = body[0].string, let adapter = body[1].string, let reason = body[2].string else { return nil }
            return json
                ? "{\"event\": \"disconnected\", \"central\": \(StatusFormat.quote(central)), \"adapter\": \(StatusFormat.quote(adapter)), \"reason\": \(StatusFormat.quote(reason))}"
                : "disconnected \(Untrusted.escaped(central)) \(Untrusted.escaped(adapter))" + (reason.isEmpty ? "" : " " + field(reason))
        case .linkChanged?:
            guard body.count == 4, let central = body[0].string, let adapter = body[1].string, let mtu = body[2].uint16,
                  let cut = body[3].stringArray else { return nil }
            return json
                ? "{\"event\": \"link\", \"central\": \(StatusFormat.quote(central)), \"adapter\": \(StatusFormat.quote(adapter)), \"mtu\": \(mtu), \"cut\": [" + cut.map(StatusFormat.quote).joined(separator: ", ") + "]}"
                : "link \(Untrusted.escaped(central)) \(Untrusted.escaped(adapter)) mtu \(mtu)" + (cut.isEmpty ? "" : " cut " + cut.map(Untrusted.escaped).joined(separator: ","))
        case .subscription?:
            guard body.count == 3, let service = body[0].string, let characteristic = body[1].string,
                  case .boolean(let subscribed) = body[2] else { return nil }
            let event = subscribed ? "subscribed" : "unsubscribed"
            return json
                ? "{\"event\": \"\(event)\", \"service\": \(StatusFormat.quote(service)), \"characteristic\": \(StatusFormat.quote(characteristic))}"
                : "\(event) \(Untrusted.escaped(service)).\(Untrusted.escaped(characteristic))"
        case .pairing?, nil:
            // A window's events are sent to its opener alone: never this command's to print.
            return nil
        }
    }

    /// A value as one field of a text line: as it is when it is one word, else quoted, so that
    /// a space, a quote or a backslash in it cannot make it look like more fields.
    static func field(_ value: String) -> String {
        value.isEmpty || value.contains(where: { $0 == " " || $0 == "\"" || $0 == "\\" })
            ? Untrusted.quoted(value, limit: 512) : Untrusted.escaped(value)
    }
}
