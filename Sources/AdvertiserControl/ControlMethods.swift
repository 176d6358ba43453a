import DBus
import Peripheral

/// The control interface's methods, each with its arguments, who may call it and what a call
/// does: the one list the service exports, the bus policy's tests check and the committed
/// introspection follows (in this order).
extension ControlAPI.Method {
    /// Every method, in the order the interface lists them.
    public static let all: [Self] = [
        .on, .off, .status, .list, .set, .notify, .event, .reload, .pair, .confirm, .bonds, .forget, .adopt, .improvAuthorize, .subscribe, .centrals, .disconnect, .stack,
    ]

    /// `On(as names)`: puts advertisements on air (every configured one when `names` is
    /// empty); returns once BlueZ registered them all.
    public static let on = Self("On", of: (any AdvertisingControl).self, inputs: [DBusArgument("names", .array(.string))], access: .group) { target in
        { call in
            let names = try call.decoded([String].self)
            return try await perform { () throws(PeripheralError) in try await target.on(names) }
        }
    }

    /// `Off(as names)`: takes advertisements off air (every configured one when empty).
    public static let off = Self("Off", of: (any AdvertisingControl).self, inputs: [DBusArgument("names", .array(.string))], access: .group) { target in
        { call in
            let names = try call.decoded([String].self)
            return try await perform { () throws(PeripheralError) in try await target.off(names) }
        }
    }

    /// `Status() -> a{sa{sv}}`: per configured name, advertisements and GATT services (whose
    /// state is the services' registration), `kind` s (advertisement, service), `desired` b,
    /// `state` s (on, off, retrying, waiting, failed), `since_seconds` d, `values` a{ss} (its
    /// config values, as set now), and when set `id` s, `error` s, `error_code` s,
    /// `retry_in_seconds` d, `ignored` as (config fields bluetoothd accepted but does not act
    /// on), `mismatch` s. The values of secured characteristics (`security` not none) are
    /// there for root, bleadvd's user and group `bleadvd` alone.
    public static let status = Self(
        "Status", of: (any AdvertisingControl).self, outputs: [DBusArgument("states", .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)))],
        access: .everyone
    ) { target in
        { call in
            let status = await target.status(for: call.sender ?? "")
            return [.dictionary(
                key: .string, value: .dictionary(key: .string, value: .variant),
                status.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), $0.value.dbusValue) })]
        }
    }

    /// `List() -> as`: the configured names, advertisements and GATT services, sorted: the
    /// names `Status` reports.
    public static let list = Self("List", of: (any AdvertisingControl).self, outputs: [DBusArgument("names", .array(.string))], access: .everyone) { target in
        { _ in [.strings(await target.list())] }
    }

    /// `Set(s name, a{sv} values)`: changes values on air in place (BTHome measurements,
    /// beacon fields, raw fields by config key; a GATT service's characteristics, which
    /// subscribed centrals are notified of), checked as the config file is.
    public static let set = Self(
        "Set", of: (any AdvertisingControl).self, inputs: [DBusArgument("name", .string), DBusArgument("values", .dictionary(key: .string, value: .variant))], access: .group
    ) { target in
        { call in
            let (name, given) = try call.decoded(String.self, Entries<Variant>.self)
            return try await perform { () throws(PeripheralError) in
                var values: [String: DBusValue] = [:]
                for (key, value) in given.entries {
                    guard values.updateValue(value.value, forKey: key) == nil else {
                        throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(key)) is given twice; give each key once")
                    }
                }
                try await target.set(name, values)
            }
        }
    }

    /// `Notify(s name, s central, a{sv} values)`: notifies one subscribed central of a value of
    /// one of a GATT service's characteristics (`values` holds one entry), checked against its
    /// format as `Set` checks it, without changing the characteristic's value (what reads and
    /// `Status` give); where BlueZ gives each central a notification socket (5.71 and later,
    /// characteristics that notify and do not indicate).
    public static let notify = Self(
        "Notify", of: (any AdvertisingControl).self,
        inputs: [DBusArgument("name", .string), DBusArgument("central", .string), DBusArgument("values", .dictionary(key: .string, value: .variant))],
        access: .group
    ) { target in
        { call in
            let (name, central, given) = try call.decoded(String.self, String.self, Entries<Variant>.self)
            return try await perform { () throws(PeripheralError) in
                var values: [String: DBusValue] = [:]
                for (key, value) in given.entries {
                    guard values.updateValue(value.value, forKey: key) == nil else {
                        throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(key)) is given twice; give each key once")
                    }
                }
                try await target.notify(name, central: central, values)
            }
        }
    }

    /// `Event(s name, a{ss} event) -> (u ahead, d burst_seconds)`: a BTHome sensor's button or
    /// dimmer event (`button` or `button.N`: press, double_press, triple_press, long_press,
    /// long_double_press, long_triple_press, hold_press; `dimmer` or `dimmer.N`: +N or -N steps),
    /// on air at once for the sensor's `event_seconds` with one packet id, or after the `ahead`
    /// events given before it, each on air as long.
    public static let event = Self(
        "Event", of: (any EventsControl).self, inputs: [DBusArgument("name", .string), DBusArgument("event", .dictionary(key: .string, value: .string))],
        outputs: [DBusArgument("ahead", .uint32), DBusArgument("burst_seconds", .double)], access: .group
    ) { target in
        { call in
            let (name, entries) = try call.decoded(String.self, Entries<String>.self)
            // A key given twice: the last one counts.
            let given = Dictionary(entries.entries, uniquingKeysWith: { $1 })
            return try await answer { () throws(PeripheralError) -> [DBusValue] in
                let queued = try await target.event(name, given)
                return [.uint32(UInt32(clamping: queued.ahead)), .double(queued.burstSeconds)]
            }
        }
    }

    /// `Reload()`: re-reads the config file; a bad file is refused and nothing changes.
    public static let reload = Self("Reload", of: (any DaemonControl).self, access: .group) { target in
        { _ in
            do {
                try await target.reload()
            } catch let error as ReloadError {
                throw DBusError(ControlAPI.configError, error.message)
            }
            return []
        }
    }

    /// `Pair(u seconds) -> (s method, u seconds)`: opens a pairing window for `seconds`
    /// (0: the config's `window_seconds`); returns the method and the window's length. The
    /// window closes when it runs out or once a central bonded; its events are `Pairing`
    /// signals sent to the caller alone. Refused (`Invalid`) when `[pairing] method` is `off`.
    public static let pair = Self(
        "Pair", of: (any PairingControl).self, inputs: [DBusArgument("seconds", .uint32)], outputs: [DBusArgument("method", .string), DBusArgument("seconds", .uint32)],
        access: .root
    ) { target in
        { call in
            let seconds = try call.decoded(UInt32.self)
            return try await answer { () throws(PeripheralError) in
                let (method, length) = try await target.pair(for: seconds == 0 ? nil : Int(seconds), by: call.sender ?? "")
                return [.string(method.rawValue), .uint32(UInt32(length))]
            }
        }
    }

    /// `Confirm(s central, b matches)`: answers a numeric comparison the central asked for
    /// (`Pairing` with event `confirm`): true when both sides show the same code. Only the
    /// connection that opened the window may answer (`AccessDenied` for any other).
    public static let confirm = Self(
        "Confirm", of: (any PairingControl).self, inputs: [DBusArgument("central", .string), DBusArgument("matches", .boolean)], access: .root
    ) { target in
        { call in
            let (central, matches) = try call.decoded(String.self, Bool.self)
            return try await perform { () throws(PeripheralError) in try await target.confirm(central, matches: matches, by: call.sender ?? "") }
        }
    }

    /// `Bonds() -> a{ss}`: the centrals bonded with the adapter, address to name (empty
    /// when it gave none).
    public static let bonds = Self("Bonds", of: (any PairingControl).self, outputs: [DBusArgument("bonds", .dictionary(key: .string, value: .string))], access: .root) { target in
        { _ in
            try await answer { () throws(PeripheralError) in
                let bonds = try await target.bonds()
                return [.dictionary(key: .string, value: .string, bonds.map { DBusDictEntry(.string($0.central), .string($0.name ?? "")) })]
            }
        }
    }

    /// `Forget(s central, b any)`: removes the bond with a central that bonded in one of
    /// bleadvd's pairing windows, or with any central when `any` is true (`UnknownName` when
    /// none is bonded, `AccessDenied` for a bond bleadvd did not make and `any` false).
    public static let forget = Self(
        "Forget", of: (any PairingControl).self, inputs: [DBusArgument("central", .string), DBusArgument("any", .boolean)], access: .root
    ) { target in
        { call in
            let (central, any) = try call.decoded(String.self, Bool.self)
            return try await perform { () throws(PeripheralError) in try await target.forget(central, any: any) }
        }
    }

    /// `Adopt(s central)`: records a bond that no bleadvd pairing window made (one made
    /// before bleadvd was installed, say) as bleadvd's: the central may then read and write
    /// secured characteristics, which bleadvd serves to the centrals its windows bonded
    /// alone (`UnknownName` when it is not bonded).
    public static let adopt = Self("Adopt", of: (any PairingControl).self, inputs: [DBusArgument("central", .string)], access: .root) { target in
        { call in
            let central = try call.decoded(String.self)
            return try await perform { () throws(PeripheralError) in try await target.adopt(central) }
        }
    }

    /// `ImprovAuthorize(s central) -> (u seconds, s central)`: allows one connected central
    /// (its address; empty: the only one connected) to provision Improv Wi-Fi for the
    /// configured `authorization_seconds`; returns them and the central's address. Every
    /// other central's Improv frames are ignored meanwhile; it ends with the central's link.
    /// Refused (`Invalid`) when
    /// `[improv]` is not configured, needs no authorization, the device is joining or
    /// provisioned, or the central is not connected (none or several are, with an empty
    /// address: the message lists them).
    public static let improvAuthorize = Self(
        "ImprovAuthorize", of: (any ImprovControl).self, inputs: [DBusArgument("central", .string)],
        outputs: [DBusArgument("seconds", .uint32), DBusArgument("central", .string)], access: .root
    ) { target in
        { call in
            let given = try call.decoded(String.self)
            return try await answer { () throws(PeripheralError) in
                let (seconds, central) = try await target.improvAuthorize(given)
                return [.uint32(UInt32(seconds)), .string(central)]
            }
        }
    }

    /// `Subscribe()`: from now until the caller leaves the bus, every `ValuesChanged` and
    /// `Written` is also sent to it alone, whole: with the values of secured
    /// characteristics, which the broadcasts leave out. For root, bleadvd's user and group
    /// `bleadvd` (`AccessDenied` for anyone else); at most four a user and 32 in all
    /// (`Failed`), root's apart.
    public static let subscribe = Self("Subscribe", of: (any AdvertisingControl).self, access: .group) { target in
        { call in try await perform { () throws(PeripheralError) in try await target.subscribe(call.sender ?? "") } }
    }

    /// Runs `body`, answering its peripheral error as the control API names it.
    private static func answer(_ body: () async throws(PeripheralError) -> [DBusValue]) async throws -> [DBusValue] {
        do {
            return try await body()
        } catch {
            throw ControlAPI.dbusError(error)
        }
    }

    /// ``answer(_:)`` for a method that returns nothing.
    private static func perform(_ body: () async throws(PeripheralError) -> Void) async throws -> [DBusValue] {
        try await answer { () throws(PeripheralError) -> [DBusValue] in
            try await body()
            return []
        }
    }

    /// `Centrals() -> a{sa{sv}}`: the centrals connected now, by address: `adapter` s,
    /// `since_seconds` d, `idle_seconds` d (since its last read, write or subscription), and
    /// when known `bonded` b and `mtu` q (the link's ATT MTU, from its last read or write).
    /// Who is connected is the owner's business: root, bleadvd's user and group `bleadvd`.
    public static let centrals = Self(
        "Centrals", of: (any CentralsControl).self, outputs: [DBusArgument("centrals", .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)))],
        access: .group
    ) { target in
        { _ in
            let centrals = await target.centrals()
            return [.dictionary(
                key: .string, value: .dictionary(key: .string, value: .variant),
                centrals.sorted { $0.address < $1.address }.map { DBusDictEntry(.string($0.address), $0.dbusValue) })]
        }
    }

    /// `Disconnect(s central)`: ends the link with a connected central (`UnknownName` when none
    /// is); a central that bonded may connect again.
    public static let disconnect = Self("Disconnect", of: (any CentralsControl).self, inputs: [DBusArgument("central", .string)], access: .root) { target in
        { call in
            let central = try call.decoded(String.self)
            return try await perform { () throws(PeripheralError) in try await target.disconnect(central) }
        }
    }
}

extension DBusMethodCall {
    /// The call's one argument, as `A`. The connection checked it against the method's inputs
    /// already: one not of its type answers `InvalidArgs`.
    func decoded<A: ControlArgument>(_ a: A.Type) throws -> A {
        guard let first = arguments.decoded(A.self) else { throw mismatch }
        return first
    }

    /// The call's two arguments, as `A` and `B`.
    func decoded<A: ControlArgument, B: ControlArgument>(_ a: A.Type, _ b: B.Type) throws -> (A, B) {
        guard let both = arguments.decoded(A.self, B.self) else { throw mismatch }
        return both
    }

    /// The call's three arguments, as `A`, `B` and `C`.
    func decoded<A: ControlArgument, B: ControlArgument, C: ControlArgument>(_ a: A.Type, _ b: B.Type, _ c: C.Type) throws -> (A, B, C) {
        guard arguments.count == 3, let first = A(dbusValue: arguments[0]), let second = B(dbusValue: arguments[1]),
              let third = C(dbusValue: arguments[2]) else { throw mismatch }
        return (first, second, third)
    }

    /// The answer to arguments that are not the method's.
    private var mismatch: DBusError {
        DBusError(.invalidArgs, "\(message.member ?? "the call")'s arguments are not as the control API declares them")
    }
}

/// A dictionary argument (`a{sv}`, `a{ss}`) as the call carries it: each entry in order, a key
/// given twice kept twice, for the handler to refuse (`Set`) or take the last of (`Event`).
struct Entries<Value: ControlArgument>: ControlArgument {
    /// The entries, in the call's order.
    var entries: [(key: String, value: Value)]

    /// `a{s…}`.
    static var dbusType: DBusType { .dictionary(key: .string, value: Value.dbusType) }
    /// As a dictionary, in order.
    var dbusValue: DBusValue { .dictionary(key: .string, value: Value.dbusType, entries.map { DBusDictEntry(.string($0.key), $0.value.dbusValue) }) }
    /// The entries of a dictionary of strings to `Value`s; nil for any other.
    init?(dbusValue: DBusValue) {
        guard case .dictionary(.string, Value.dbusType, let items) = dbusValue else { return nil }
        var entries: [(key: String, value: Value)] = []
        for item in items {
            guard let key = item.key.string, let value = Value(dbusValue: item.value) else { return nil }
            entries.append((key, value))
        }
        self.entries = entries
    }
    /// The same entries in the same order.
    static func == (a: Self, b: Self) -> Bool { a.entries.elementsEqual(b.entries) { $0.key == $1.key && $0.value == $1.value } }
}

/// A variant argument (`v`) holding any value: `Set`'s values, typed by their key.
struct Variant: ControlArgument {
    /// The value inside.
    var value: DBusValue

    /// `value` in a variant.
    init(_ value: DBusValue) {
        self.value = value
    }

    /// `v`.
    static var dbusType: DBusType { .variant }
    /// In a variant.
    var dbusValue: DBusValue { .variant(value) }
    /// The value inside a variant; nil for any other.
    init?(dbusValue: DBusValue) {
        guard let value = dbusValue.variantValue else { return nil }
        self.value = value
    }
}
