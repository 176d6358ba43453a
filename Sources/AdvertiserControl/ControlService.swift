public import DBus
public import Peripheral

/// The control API's advertising part, which the daemon serves: what is on air, its values, the
/// config.
public protocol AdvertisingControl: Sendable {
    /// Puts the named advertisements on air (all when `names` is empty); returns once registered.
    func on(_ names: [String]) async throws(PeripheralError)
    /// Takes the named advertisements off air (all when `names` is empty).
    func off(_ names: [String]) async throws(PeripheralError)
    /// The state of every advertisement, as `caller` (a unique name) may see it: the values of
    /// secured characteristics for a trusted local user alone.
    func status(for caller: String) async -> [String: AdvertisementState]
    /// The configured names, sorted.
    func list() async -> [String]
    /// Changes values of one advertisement or GATT service on air, in place: `values` by the
    /// keys of its config table (`temperature`, `major`, `local_name`,
    /// `manufacturer_data.0xFFFF`; a service's characteristics, `level`), each a string as
    /// typed, or a number, a boolean or an array of strings.
    /// - Throws: `unknownName`, or `invalidValue` naming the key (nothing changes then).
    func set(_ name: String, _ values: [String: DBusValue]) async throws(PeripheralError)
    /// Notifies `central` (its address) alone of a value of one of GATT service `name`'s
    /// characteristics (`values` holds one), checked as ``set(_:_:)`` checks it; the
    /// characteristic's value stays as it is.
    /// - Throws: `unknownName` (the service, a characteristic, or a central not subscribed),
    ///   `invalidValue`, or `rejected` where the stack notifies every subscriber alike.
    func notify(_ name: String, central: String, _ values: [String: DBusValue]) async throws(PeripheralError)
    /// Sends `caller` every `ValuesChanged` and `Written` whole, until it leaves the bus.
    /// - Throws: `accessDenied` for a caller not trusted with secured values.
    func subscribe(_ caller: String) async throws(PeripheralError)
}

/// The control API's daemon part, which the daemon serves itself: what concerns the process.
public protocol DaemonControl: Sendable {
    /// Re-reads the config file.
    /// - Throws: a message naming the file, line and key when the new config is refused.
    func reload() async throws(ReloadError)
}

/// The control API's pairing part, which the pairing component serves: its window, the
/// comparisons, the bonds.
public protocol PairingControl: Sendable {
    /// Opens a pairing window for `seconds` (nil: the configured length) on behalf of `caller`
    /// (the bus's unique name of whoever asked), to whom alone the window's events and codes
    /// go; returns the method and the length.
    /// - Throws: `invalid` when pairing is off.
    func pair(for seconds: Int?, by caller: String) async throws(PeripheralError) -> (method: PairingMethod, seconds: Int)
    /// Answers the numeric comparison `central` asked for; `caller` must be whoever opened the
    /// window.
    /// - Throws: `unknownName` when it asked for none, `accessDenied` for another caller.
    func confirm(_ central: String, matches: Bool, by caller: String) async throws(PeripheralError)
    /// The centrals bonded with the adapter.
    func bonds() async throws(PeripheralError) -> [Bond]
    /// Removes the bond with `central`, when a pairing window of bleadvd's made it or `any` is
    /// true.
    /// - Throws: `unknownName` when it is not bonded, `accessDenied` when bleadvd did not make
    ///   the bond and `any` is false.
    func forget(_ central: String, any: Bool) async throws(PeripheralError)
    /// Records the bond with `central` as one of bleadvd's, so that it may use secured
    /// characteristics.
    /// - Throws: `unknownName` when it is not bonded.
    func adopt(_ central: String) async throws(PeripheralError)
}

/// The control API's Improv part, which Improv's component serves.
public protocol ImprovControl: Sendable {
    /// Allows Improv Wi-Fi provisioning for the configured time; returns it, in seconds.
    /// - Throws: `invalid` when Improv is not configured, needs no authorization, is not on air
    ///   now, or the device is joining a network or provisioned already.
    func improvAuthorize(_ central: String) async throws(PeripheralError) -> (seconds: Int, central: String)
}

/// What serves the control API: its parts (``AdvertisingControl``, ``PairingControl``,
/// ``ImprovControl``), each served by a component of its own. A method goes to the first target
/// that serves its part; a part no target serves answers `org.freedesktop.DBus.Error.Failed`.
public struct ControlTargets: Sendable {
    let targets: [any Sendable]

    /// The targets, in the order a method looks for its part among them.
    public init(_ targets: [any Sendable]) {
        self.targets = targets
    }

    /// The first target that serves `part` (`(any PairingControl).self`, say).
    public func first<Part>(_ part: Part.Type) -> Part? {
        for target in targets {
            if let served = target as? Part { return served }
        }
        return nil
    }
}

/// A refused config, as `Reload` reports it.
public struct ReloadError: Error, Hashable, Sendable {
    /// `FILE:LINE: KEY: what is wrong`.
    public var message: String

    /// An error.
    public init(_ message: String) {
        self.message = message
    }
}

/// Serves the control API for its ``ControlTargets`` on a connection.
public enum ControlService {
    /// Exports the control object: every ``ControlAPI/Method`` with its handler, given the
    /// target of its part, and every signal (``ControlAPI/signals``). The caller owns the bus name
    /// (``ControlAPI/busName``).
    public static func export(_ targets: ControlTargets, on connection: DBusConnection) async throws {
        let methods = ControlAPI.Method.all.map { method in
            DBusMethod(method.name, inputs: method.inputs, outputs: method.outputs, handler: method.handler(targets))
        }
        let signals = ControlAPI.signals.map { DBusSignalDescription($0.name, arguments: $0.arguments) }
        try await connection.export(
            [DBusInterface(name: ControlAPI.interface, methods: methods, signals: signals)], at: ControlAPI.path)
    }

    /// Sends `signal` from the control object: to `destination` alone (a unique name), or a
    /// broadcast when it is nil.
    public static func emit<Signal: ControlSignal>(_ signal: Signal, to destination: String? = nil, on connection: DBusConnection) async {
        try? await connection.emit(path: ControlAPI.path, interface: ControlAPI.interface, member: Signal.name, signal.body, to: destination)
    }
}
