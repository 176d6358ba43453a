public import DBus
public import Peripheral

/// What the control API drives: the daemon, or a test's stand-in for it.
public protocol AdvertiserControlling: Sendable {
    /// Puts the named advertisements on air (all when `names` is empty); returns once registered.
    func on(_ names: [String]) async throws(PeripheralError)
    /// Takes the named advertisements off air (all when `names` is empty).
    func off(_ names: [String]) async throws(PeripheralError)
    /// The state of every advertisement.
    func status() async -> [String: AdvertisementState]
    /// The configured names, sorted.
    func list() async -> [String]
    /// Re-reads the config file.
    /// - Throws: a message naming the file, line and key when the new config is refused.
    func reload() async throws(ReloadError)
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

/// Serves the control API for an ``AdvertiserControlling`` on a connection.
public enum ControlService {
    /// Exports the control object. The caller owns the bus name (``ControlAPI/busName``).
    public static func export(_ target: any AdvertiserControlling, on connection: DBusConnection) async throws {
        let names = DBusArgument("names", .array(.string))
        let methods = [
            DBusMethod("On", inputs: [names]) { call in
                try await perform { () throws(PeripheralError) in try await target.on(call.arguments[0].stringArray ?? []) }
            },
            DBusMethod("Off", inputs: [names]) { call in
                try await perform { () throws(PeripheralError) in try await target.off(call.arguments[0].stringArray ?? []) }
            },
            DBusMethod("Status", outputs: [DBusArgument("advertisements", .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)))]) { _ in
                let status = await target.status()
                return [.dictionary(
                    key: .string, value: .dictionary(key: .string, value: .variant),
                    status.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), $0.value.dbusValue) })]
            },
            DBusMethod("List", outputs: [DBusArgument("names", .array(.string))]) { _ in
                [.strings(await target.list())]
            },
            DBusMethod("Reload") { _ in
                do {
                    try await target.reload()
                } catch let error as ReloadError {
                    throw DBusError(ControlAPI.configError, error.message)
                }
                return []
            },
        ]
        let signals = [DBusSignalDescription("StateChanged", arguments: [DBusArgument("name", .string), DBusArgument("state", .string)])]
        try await connection.export(
            [DBusInterface(name: ControlAPI.interface, methods: methods, signals: signals)], at: ControlAPI.path)
    }

    /// Announces a state change.
    public static func stateChanged(_ name: String, _ state: AdvertisementState.State, on connection: DBusConnection) async {
        try? await connection.emit(
            path: ControlAPI.path, interface: ControlAPI.interface, member: "StateChanged",
            [.string(name), .string(state.rawValue)])
    }

    private static func perform(_ body: () async throws(PeripheralError) -> Void) async throws -> [DBusValue] {
        do {
            try await body()
        } catch {
            throw ControlAPI.dbusError(error)
        }
        return []
    }
}
