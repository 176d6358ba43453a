public import DBus

/// A client of the control API, for `bleadvctl` and any Swift program.
public struct AdvertiserClient: Sendable {
    /// The connection it calls over.
    public let connection: DBusConnection
    /// How long a call may take; `On` waits for BlueZ and the controller.
    public var timeout: Duration = .seconds(30)

    /// A client on a connection (the system bus in production).
    public init(connection: DBusConnection) {
        self.connection = connection
    }

    /// Puts advertisements on air (all configured when `names` is empty).
    public func on(_ names: [String]) async throws {
        _ = try await call("On", [.strings(names)])
    }

    /// Takes advertisements off air (all configured when `names` is empty).
    public func off(_ names: [String]) async throws {
        _ = try await call("Off", [.strings(names)])
    }

    /// The state of every advertisement, by name.
    public func status() async throws -> [String: AdvertisementState] {
        let reply = try await call("Status", expecting: "a{sa{sv}}")
        var result: [String: AdvertisementState] = [:]
        for entry in reply[0].dictionaryEntries ?? [] {
            guard let name = entry.key.string, let state = AdvertisementState(entry.value) else {
                throw DBusError(.invalidArgs, "the daemon's Status reply has an entry that is not a state")
            }
            result[name] = state
        }
        return result
    }

    /// The configured names.
    public func list() async throws -> [String] {
        try await call("List", expecting: "as")[0].stringArray ?? []
    }

    /// Changes values of an advertisement on air (`bleadvctl set`): each value as typed; the
    /// daemon reads it as the type its key holds.
    public func set(_ name: String, _ values: [String: String]) async throws {
        _ = try await call("Set", [.string(name), .variantDictionary(values.mapValues { .string($0) })])
    }

    /// Makes the daemon re-read its config file.
    public func reload() async throws {
        _ = try await call("Reload")
    }

    private func call(_ member: String, _ arguments: [DBusValue] = [], expecting: DBusSignature? = nil) async throws -> [DBusValue] {
        try await connection.call(
            destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface, member: member,
            arguments, expecting: expecting, timeout: timeout)
    }
}
