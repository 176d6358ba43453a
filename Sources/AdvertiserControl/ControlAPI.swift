public import DBus
public import Peripheral

/// The daemon's D-Bus contract, written once: the server exports it, the client calls it, and
/// tests hold the committed introspection (`systemd/org.bleadvd.Advertiser1.xml`), the bus
/// policy and `bleadvd(8)` to it. Any program can use it; `bleadvctl` is one.
///
/// Bus name `org.bleadvd.Advertiser` on the system bus, object `/org/bleadvd/Advertiser`,
/// interface `org.bleadvd.Advertiser1`; its members are ``Method`` and ``Signal``. Errors are
/// named `org.bleadvd.Error.<Code>` after `PeripheralError.Code` (e.g.
/// `org.bleadvd.Error.UnknownName`), plus `org.bleadvd.Error.Config` for a refused config
/// (``errorNames``).
///
/// Adding a method: a case of ``Method`` with its arguments and who may call it
/// (``Method/access``), its handler in `ControlService` (the compiler asks for it), and its
/// rule in the bus policy unless it is root's alone; then the contract's tests say what else
/// to update.
public enum ControlAPI {
    /// bleadvd's version, which `--version` of both programs prints and the Makefile gives
    /// the .deb: the one place it is written.
    public static let version = "0.1.0"
    /// The daemon's well-known name.
    public static let busName = "org.bleadvd.Advertiser"
    /// The control object.
    public static let path: DBusObjectPath = "/org/bleadvd/Advertiser"
    /// The control interface.
    public static let interface = "org.bleadvd.Advertiser1"
    /// The prefix of the daemon's error names.
    public static let errorPrefix = "org.bleadvd.Error."
    /// The error name of a refused config file.
    public static let configError = DBusError.Name(rawValue: errorPrefix + "Config")

    /// The D-Bus error name for a peripheral error code: `org.bleadvd.Error.NoFreeInstance`.
    public static func errorName(_ code: PeripheralError.Code) -> DBusError.Name {
        DBusError.Name(rawValue: errorPrefix + code.rawValue.prefix(1).uppercased() + String(code.rawValue.dropFirst()))
    }

    /// A peripheral error as the daemon answers it.
    public static func dbusError(_ error: PeripheralError) -> DBusError {
        DBusError(errorName(error.code), error.message)
    }

    /// Every error name the daemon answers a call with.
    public static let errorNames: [DBusError.Name] = PeripheralError.Code.allCases.map(errorName) + [configError]

    /// A method of the control interface.
    public enum Method: String, CaseIterable, Sendable {
        /// `On(as names)`: puts advertisements on air (every configured one when `names` is
        /// empty); returns once BlueZ registered them all.
        case on = "On"
        /// `Off(as names)`: takes advertisements off air (every configured one when empty).
        case off = "Off"
        /// `Status() -> a{sa{sv}}`: per configured name, advertisements and GATT services (whose
        /// state is the services' registration), `kind` s (advertisement, service), `desired` b,
        /// `state` s (on, off, retrying, waiting, failed), `since_seconds` d, `values` a{ss} (its
        /// config values, as set now), and when set `id` s, `error` s, `error_code` s,
        /// `retry_in_seconds` d, `ignored` as (config fields bluetoothd accepted but does not act
        /// on), `mismatch` s. The values of secured characteristics (`security` not none) are
        /// there for root, bleadvd's user and group `bleadvd` alone.
        case status = "Status"
        /// `List() -> as`: the configured names, advertisements and GATT services, sorted: the
        /// names `Status` reports.
        case list = "List"
        /// `Set(s name, a{sv} values)`: changes values on air in place (BTHome measurements,
        /// beacon fields, raw fields by config key; a GATT service's characteristics, which
        /// subscribed centrals are notified of), checked as the config file is.
        case set = "Set"
        /// `Reload()`: re-reads the config file; a bad file is refused and nothing changes.
        case reload = "Reload"
        /// `Pair(u seconds) -> (s method, u seconds)`: opens a pairing window for `seconds`
        /// (0: the config's `window_seconds`); returns the method and the window's length. The
        /// window closes when it runs out or once a central bonded; its events are `Pairing`
        /// signals sent to the caller alone. Refused (`Invalid`) when `[pairing] method` is `off`.
        case pair = "Pair"
        /// `Confirm(s central, b matches)`: answers a numeric comparison the central asked for
        /// (`Pairing` with event `confirm`): true when both sides show the same code. Only the
        /// connection that opened the window may answer (`AccessDenied` for any other).
        case confirm = "Confirm"
        /// `Bonds() -> a{ss}`: the centrals bonded with the adapter, address to name (empty
        /// when it gave none).
        case bonds = "Bonds"
        /// `Forget(s central, b any)`: removes the bond with a central that bonded in one of
        /// bleadvd's pairing windows, or with any central when `any` is true (`UnknownName` when
        /// none is bonded, `AccessDenied` for a bond bleadvd did not make and `any` false).
        case forget = "Forget"
        /// `Adopt(s central)`: records a bond that no bleadvd pairing window made (one made
        /// before bleadvd was installed, say) as bleadvd's: the central may then read and write
        /// secured characteristics, which bleadvd serves to the centrals its windows bonded
        /// alone (`UnknownName` when it is not bonded).
        case adopt = "Adopt"
        /// `ImprovAuthorize(s central) -> (u seconds, s central)`: allows one connected central
        /// (its address; empty: the only one connected) to provision Improv Wi-Fi for the
        /// configured `authorization_seconds`; returns them and the central's address. Every
        /// other central's Improv frames are ignored meanwhile. Refused (`Invalid`) when
        /// `[improv]` is not configured, needs no authorization, the device is joining or
        /// provisioned, or the central is not connected (none or several are, with an empty
        /// address: the message lists them).
        case improvAuthorize = "ImprovAuthorize"
        /// `Subscribe()`: from now until the caller leaves the bus, every `ValuesChanged` and
        /// `Written` is also sent to it alone, whole: with the values of secured
        /// characteristics, which the broadcasts leave out. For root, bleadvd's user and group
        /// `bleadvd` (`AccessDenied` for anyone else); at most four a user and 32 in all
        /// (`Failed`), root's apart.
        case subscribe = "Subscribe"

        /// The member name.
        public var name: String { rawValue }

        /// The arguments a call carries.
        public var inputs: [DBusArgument] {
            switch self {
            case .on, .off: [DBusArgument("names", .array(.string))]
            case .set: [DBusArgument("name", .string), DBusArgument("values", .dictionary(key: .string, value: .variant))]
            case .pair: [DBusArgument("seconds", .uint32)]
            case .confirm: [DBusArgument("central", .string), DBusArgument("matches", .boolean)]
            case .forget: [DBusArgument("central", .string), DBusArgument("any", .boolean)]
            case .adopt: [DBusArgument("central", .string)]
            case .improvAuthorize: [DBusArgument("central", .string)]
            case .status, .list, .reload, .bonds, .subscribe: []
            }
        }

        /// The arguments of its reply.
        public var outputs: [DBusArgument] {
            switch self {
            case .status: [DBusArgument("states", .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)))]
            case .list: [DBusArgument("names", .array(.string))]
            case .pair: [DBusArgument("method", .string), DBusArgument("seconds", .uint32)]
            case .bonds: [DBusArgument("bonds", .dictionary(key: .string, value: .string))]
            case .improvAuthorize: [DBusArgument("seconds", .uint32), DBusArgument("central", .string)]
            case .on, .off, .set, .reload, .confirm, .forget, .adopt, .subscribe: []
            }
        }

        /// Who may call a method, as the bus policy (`org.bleadvd.Advertiser.conf`) says it.
        public enum Access: Hashable, Sendable, CaseIterable {
            /// Everyone: it only reads what is on air.
            case everyone
            /// Root, the group `bleadvd` and the daemon's own user: it changes what is on air.
            case group
            /// Root alone: it lets a central in, or reaches the box's bonds or its network
            /// (pairing, confirming, bonds, forgetting, adopting, authorizing Improv).
            case root
        }

        /// Who may call it.
        public var access: Access {
            switch self {
            case .status, .list: .everyone
            case .on, .off, .set, .reload, .subscribe: .group
            case .pair, .confirm, .bonds, .forget, .adopt, .improvAuthorize: .root
            }
        }
    }

    /// A signal of the control interface.
    public enum Signal: String, CaseIterable, Sendable {
        /// `StateChanged(s name, s state)`, once per change; changes in quick succession are
        /// coalesced, so a listener may miss a passing state but always gets the latest.
        case stateChanged = "StateChanged"
        /// `ValuesChanged(s name, a{ss} values)` when changed values went to BlueZ: every key of
        /// the advertisement with its value as the config file would write it; a service's
        /// secured characteristics only in the copy sent to each subscriber (`Subscribe`).
        case valuesChanged = "ValuesChanged"
        /// `Written(s service, s characteristic, v value, s central)` when a connected central
        /// wrote a characteristic and the value was taken (it fit the declared format): the
        /// value is a number (d), text (s) or bytes (ay) as the format says, and no bytes for a
        /// write-only characteristic, whose values are secrets; no bytes either for a secured
        /// characteristic, but in the copy sent to each subscriber (`Subscribe`); `central` is
        /// its address, empty when BlueZ did not say.
        case written = "Written"
        /// `Pairing(s event, s central, s detail)`: what happens in a pairing window, sent to
        /// the connection that opened it with `Pair` alone (a directed signal: no other
        /// connection receives it, whatever its match rules). `event` is `opened` and `closed`
        /// (the window; `central` empty), `requested` (a central asks to pair; `detail` is the
        /// 6-digit passkey the central's user types, or empty for just works), `confirm` (does
        /// the central show `detail`? answer with `Confirm`), `paired`, `refused` (`detail`
        /// says why: past its attempts, a bond without a code in a passkey or
        /// numeric-comparison window, not confirmed) and `failed` (no bond within the time: a
        /// wrong code, or the central gave up).
        case pairing = "Pairing"

        /// The member name.
        public var name: String { rawValue }

        /// Its arguments.
        public var arguments: [DBusArgument] {
            switch self {
            case .stateChanged: [DBusArgument("name", .string), DBusArgument("state", .string)]
            case .valuesChanged: [DBusArgument("name", .string), DBusArgument("values", .dictionary(key: .string, value: .string))]
            case .written:
                [DBusArgument("service", .string), DBusArgument("characteristic", .string), DBusArgument("value", .variant),
                 DBusArgument("central", .string)]
            case .pairing: [DBusArgument("event", .string), DBusArgument("central", .string), DBusArgument("detail", .string)]
            }
        }
    }
}
