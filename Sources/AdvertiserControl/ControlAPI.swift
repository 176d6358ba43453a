public import DBus
public import Peripheral

/// The daemon's D-Bus contract, written once: the server exports it, the client calls it, and
/// tests hold the committed introspection (`systemd/org.bleadvd.Advertiser1.xml`), the bus
/// policy and `bleadvd(8)` to it. Any program can use it; `bleadvctl` is one.
///
/// Bus name `org.bleadvd.Advertiser` on the system bus, object `/org/bleadvd/Advertiser`,
/// interface `org.bleadvd.Advertiser1`; its members are ``Method`` and ``signals`` (each a ``ControlSignal``). Errors are
/// named `org.bleadvd.Error.<Code>` after `PeripheralError.Code` (e.g.
/// `org.bleadvd.Error.UnknownName`), plus `org.bleadvd.Error.Config` for a refused config
/// (``errorNames``).
///
/// Adding a method: an entry of ``Method/all`` (`ControlMethods.swift`) with the part it belongs
/// to (``AdvertisingControl``, ``DaemonControl``, ``PairingControl``, ``ImprovControl``, or a
/// feature's own), its
/// arguments, who may call it (``Method/access``) and its handler (which reads its arguments
/// typed, through ``ControlArgument``, as the client sends them), and its rule in the bus policy
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
}
