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
/// Adding a method: an entry of ``Method/all`` (`ControlMethods.swift`) with the part it belongs
/// to (``AdvertisingControl``, ``PairingControl``, ``ImprovControl``, or a feature's own), its
/// arguments, who may call it (``Method/access``) and its handler, and its rule in the bus policy
/// unless it is root's alone; then the contract's tests say what else to update.
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

    /// A method of the control interface: its name, arguments, who may call it, and what a
    /// call does (its handler, given the daemon): one entry of ``all`` each, with no switch over
    /// methods anywhere else.
    public struct Method: Sendable, Hashable, CustomStringConvertible {
        /// The member name.
        public let name: String
        /// The arguments a call carries.
        public let inputs: [DBusArgument]
        /// The arguments of its reply.
        public let outputs: [DBusArgument]
        /// Who may call it.
        public let access: Access
        /// What a call does, given the targets: to the one that serves the method's part; its
        /// arguments are checked against ``inputs`` already.
        let handler: @Sendable (_ targets: ControlTargets) -> DBusMethod.Handler

        /// A method of `part`, whose `handler` says what a call does to the target serving it.
        init<Part: Sendable>(
            _ name: String, of part: Part.Type, inputs: [DBusArgument] = [], outputs: [DBusArgument] = [], access: Access,
            handler: @escaping @Sendable (_ target: Part) -> DBusMethod.Handler
        ) {
            self.name = name
            self.inputs = inputs
            self.outputs = outputs
            self.access = access
            self.handler = { targets in
                guard let target = targets.first(Part.self) else {
                    return { _ in throw DBusError(.failed, "\(name) is not served by this daemon") }
                }
                return handler(target)
            }
        }

        /// Its member name.
        public var description: String { name }
        /// The same method: the same member name.
        public static func == (a: Self, b: Self) -> Bool { a.name == b.name }
        /// Hashes its member name.
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }

        /// Who may call a method, as the bus policy (`org.bleadvd.Advertiser.conf`) says it.
        public enum Access: Hashable, Sendable, CaseIterable {
            /// Everyone: it only reads what is on air.
            case everyone
            /// Root, the group `bleadvd` and the daemon's own user: it changes what is on air, or
            /// shows what is the owner's business (who is connected, secured values).
            case group
            /// Root alone: it lets a central in, or reaches the box's bonds or its network
            /// (pairing, confirming, bonds, forgetting, adopting, authorizing Improv).
            case root
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
        /// `Connected(s central, s adapter)`: a central's link with the adapter came up. Who is
        /// connected is the owner's business: the bus policy lets root, bleadvd's user and group
        /// `bleadvd` alone receive it, `Disconnected`, `LinkChanged` and `Subscription`.
        case connected = "Connected"
        /// `Disconnected(s central, s adapter, s reason)`: it ended; `reason` says why when
        /// bleadvd ended it (`max_centrals`, idle, `Disconnect`), and is empty otherwise.
        case disconnected = "Disconnected"
        /// `LinkChanged(s central, s adapter, q mtu, as cut)` when what a link carries became
        /// known or changed: its ATT MTU (bluetoothd passes it with the central's reads, writes
        /// and subscriptions), and `cut`, the characteristics (`service.characteristic`) whose
        /// notified value was longer than MTU − 3 bytes, which BlueZ cuts for it.
        case linkChanged = "LinkChanged"
        /// `Subscription(s service, s characteristic, b subscribed)`: a central subscribed to a
        /// characteristic's notifications or indications (`true`, once per central that turns
        /// them on), or none is subscribed any longer (`false`: the last one turned them off or
        /// left). BlueZ does not say which central; `Centrals` lists it when only one was
        /// connected. A bonded central's subscription outlasts its link (bluetoothd keeps it).
        case subscription = "Subscription"

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
            case .connected: [DBusArgument("central", .string), DBusArgument("adapter", .string)]
            case .disconnected: [DBusArgument("central", .string), DBusArgument("adapter", .string), DBusArgument("reason", .string)]
            case .linkChanged:
                [DBusArgument("central", .string), DBusArgument("adapter", .string), DBusArgument("mtu", .uint16),
                 DBusArgument("cut", .array(.string))]
            case .subscription:
                [DBusArgument("service", .string), DBusArgument("characteristic", .string), DBusArgument("subscribed", .boolean)]
            }
        }
    }
}
