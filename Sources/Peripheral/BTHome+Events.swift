/// BTHome's events (bthome.io, "Events"): what a button or a dimmer did, sent in a burst of
/// packets that share one packet id, so that a receiver reports it once. A sensor declares how
/// many buttons and dimmers it has (``BTHome/buttons``, ``BTHome/dimmers``); an event's packet
/// carries an object for each of them, in order, those that did nothing as `none`: receivers
/// number them by their place (Home Assistant's `button_1`, `button_2`).
extension BTHome {
    /// The button object's id.
    public static let buttonID: UInt8 = 0x3A
    /// The dimmer object's id.
    public static let dimmerID: UInt8 = 0x3C
    /// The most buttons, or dimmers, a sensor may declare (each costs 2 or 3 of 31 bytes).
    public static let maxEventObjects = 8

    /// What a button did (object 0x3A).
    public enum ButtonEvent: UInt8, CaseIterable, Hashable, Sendable {
        /// It did nothing (another button of the sensor did).
        case none = 0x00
        /// Pressed once.
        case press = 0x01
        /// Pressed twice.
        case doublePress = 0x02
        /// Pressed three times.
        case triplePress = 0x03
        /// Held down, then let go.
        case longPress = 0x04
        /// Pressed, then held down.
        case longDoublePress = 0x05
        /// Pressed twice, then held down.
        case longTriplePress = 0x06
        /// Held down (sent while it is held).
        case holdPress = 0x80

        /// Its name in config, on the command line and in Home Assistant (`long_press`).
        public var name: String {
            switch self {
            case .none: "none"
            case .press: "press"
            case .doublePress: "double_press"
            case .triplePress: "triple_press"
            case .longPress: "long_press"
            case .longDoublePress: "long_double_press"
            case .longTriplePress: "long_triple_press"
            case .holdPress: "hold_press"
            }
        }

        /// The event named `name`, or nil.
        public init?(name: String) {
            guard let event = Self.allCases.first(where: { $0.name == name }) else { return nil }
            self = event
        }
    }

    /// What a dimmer did (object 0x3C): turned left or right by a number of steps.
    public enum DimmerEvent: Hashable, Sendable {
        /// It did nothing (another dimmer of the sensor did).
        case none
        /// Turned left (counter-clockwise) by this many steps.
        case left(UInt8)
        /// Turned right (clockwise) by this many steps.
        case right(UInt8)

        /// Its two bytes on air: the direction (0 none, 1 left, 2 right) and the steps.
        var bytes: [UInt8] {
            switch self {
            case .none: [0, 0]
            case .left(let steps): [1, steps]
            case .right(let steps): [2, steps]
            }
        }

        /// As it is given and shown: `+3` (right), `-2` (left), `0` (none).
        public var text: String {
            switch self {
            case .none: "0"
            case .left(let steps): "-\(steps)"
            case .right(let steps): "+\(steps)"
            }
        }

        /// `+N` or `N` turns right, `-N` left, N from 1 to 255; nil otherwise.
        public init?(text: String) {
            let digits = text.hasPrefix("-") || text.hasPrefix("+") ? text.dropFirst() : Substring(text)
            guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let steps = Int(digits), (1...255).contains(steps) else { return nil }
            self = text.hasPrefix("-") ? .left(UInt8(steps)) : .right(UInt8(steps))
        }
    }

    /// One event of a sensor: what each of its buttons and dimmers did, in order.
    public struct Event: Hashable, Sendable, CustomStringConvertible {
        /// Each button's event, one per declared button.
        public var buttons: [ButtonEvent]
        /// Each dimmer's event, one per declared dimmer.
        public var dimmers: [DimmerEvent]

        /// An event.
        public init(buttons: [ButtonEvent] = [], dimmers: [DimmerEvent] = []) {
            self.buttons = buttons
            self.dimmers = dimmers
        }

        /// As `bleadvctl event` takes it: `button.2=long_press dimmer=+3`, those that did
        /// nothing left out.
        public var description: String {
            let one = buttons.count == 1
            let pressed = buttons.enumerated().filter { $0.element != .none }.map { "button\(one ? "" : ".\($0.offset + 1)")=\($0.element.name)" }
            let oneDimmer = dimmers.count == 1
            let turned = dimmers.enumerated().filter { $0.element != .none }.map { "dimmer\(oneDimmer ? "" : ".\($0.offset + 1)")=\($0.element.text)" }
            return (pressed + turned).joined(separator: " ")
        }
    }

    /// The event `given` describes (`button=long_press`, `button.2=press`, `dimmer=-3`;
    /// `button` is `button.1`), every other button and dimmer `none`.
    /// - Throws: ``PeripheralError`` (`invalidValue`) naming what is wrong: an unknown key, a
    ///   button or dimmer the sensor does not have, a value that is no event.
    public func event(from given: [String: String]) throws(PeripheralError) -> Event {
        guard !given.isEmpty else {
            throw PeripheralError(.invalidValue, "no event given; e.g. \(buttons > 0 ? "button=press" : "dimmer=+1")")
        }
        var event = Event(buttons: Array(repeating: .none, count: buttons), dimmers: Array(repeating: .none, count: dimmers))
        for key in given.keys.sorted() {
            let value = given[key]!
            let parts = key.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            let kind = String(parts[0])
            let declared = kind == "button" ? buttons : kind == "dimmer" ? dimmers : -1
            guard declared >= 0 else {
                throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(key)) is no event; give button, button.N, dimmer or dimmer.N")
            }
            guard declared > 0 else {
                throw PeripheralError(.invalidValue, "\(key): the sensor has no \(kind)s; declare them with \(kind)s = 1 in its [advertisement.NAME.bthome] table")
            }
            var index = 1
            if parts.count == 2 {
                guard let number = Int(parts[1]), parts[1].count <= 2, (1...declared).contains(number) else {
                    throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(key)): the sensor has \(declared) \(kind)\(declared == 1 ? "" : "s"), \(kind).1 to \(kind).\(declared)")
                }
                index = number
            }
            if kind == "button" {
                guard let pressed = ButtonEvent(name: value), pressed != .none else {
                    throw PeripheralError(.invalidValue, "\(key): \(PeripheralError.quoted(value)) is no button event; use \(ButtonEvent.allCases.dropFirst().map(\.name).joined(separator: ", "))")
                }
                event.buttons[index - 1] = pressed
            } else {
                guard let turned = DimmerEvent(text: value) else {
                    throw PeripheralError(.invalidValue, "\(key): \(PeripheralError.quoted(value)) is no dimmer event; give the steps turned, +1 to +255 (right) or -1 to -255 (left)")
                }
                event.dimmers[index - 1] = turned
            }
        }
        return event
    }

    /// The event objects of `event`, each with its id: its buttons', then its dimmers'.
    static func objects(of event: Event) -> [(id: UInt8, bytes: [UInt8])] {
        event.buttons.map { (buttonID, [$0.rawValue]) } + event.dimmers.map { (dimmerID, $0.bytes) }
    }

    /// An event of every button and dimmer at once: the longest packet the sensor sends.
    public var fullestEvent: Event {
        Event(buttons: Array(repeating: .press, count: buttons), dimmers: Array(repeating: .right(1), count: dimmers))
    }
}
