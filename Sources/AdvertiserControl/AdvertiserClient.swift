public import DBus
public import Peripheral

/// A client of the control API, for `bleadvctl` and any Swift program: each call blocks until
/// the daemon answers.
public struct AdvertiserClient {
    /// The connection it calls over.
    public let connection: DBusBlockingConnection
    /// How long a call may take; `On` waits for BlueZ and the controller.
    public var timeout: Duration = .seconds(30)

    /// A client on a connection (the system bus in production).
    public init(connection: DBusBlockingConnection) {
        self.connection = connection
    }

    /// Puts advertisements on air (all configured when `names` is empty).
    public func on(_ names: [String]) throws {
        _ = try call(.on, names)
    }

    /// Takes advertisements off air (all configured when `names` is empty).
    public func off(_ names: [String]) throws {
        _ = try call(.off, names)
    }

    /// The state of every advertisement, by name.
    public func status() throws -> [String: AdvertisementState] {
        let reply = try call(.status)
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
    public func list() throws -> [String] {
        try decoded(.list, try call(.list), [String].self)
    }

    /// Changes values of an advertisement on air (`bleadvctl set`): each value as typed; the
    /// daemon reads it as the type its key holds.
    public func set(_ name: String, _ values: [String: String]) throws {
        _ = try call(.set, name, values.mapValues { Variant(.string($0)) })
    }

    /// Notifies one subscribed central of a value of one of a GATT service's characteristics
    /// (`bleadvctl set --central`), as typed; the characteristic's value stays.
    public func notify(_ name: String, central: String, _ values: [String: String]) throws {
        _ = try call(.notify, [name.dbusValue, central.dbusValue, values.mapValues { Variant(.string($0)) }.dbusValue])
    }

    /// Sends a BTHome sensor's event (`button=long_press`, `button.2=press`, `dimmer=-3`); returns
    /// how many events wait before it and how long each is on air.
    public func event(_ name: String, _ given: [String: String]) throws -> EventQueued {
        let (ahead, burst) = try decoded(.event, try call(.event, name, given), UInt32.self, Double.self)
        return EventQueued(ahead: Int(ahead), burstSeconds: burst)
    }

    /// Makes the daemon re-read its config file.
    public func reload() throws {
        _ = try call(.reload)
    }

    /// Opens a pairing window for `seconds` (0: the configured length); returns the method and
    /// the window's length in seconds.
    public func pair(seconds: UInt32) throws -> (method: String, seconds: UInt32) {
        try decoded(.pair, try call(.pair, seconds), String.self, UInt32.self)
    }

    /// Allows one connected central (`central`; empty: the only one connected) to provision
    /// Improv Wi-Fi; returns for how many seconds, and the central's address.
    public func improvAuthorize(_ central: String) throws -> (seconds: UInt32, central: String) {
        try decoded(.improvAuthorize, try call(.improvAuthorize, central), UInt32.self, String.self)
    }

    /// Answers a numeric comparison.
    public func confirm(_ central: String, matches: Bool) throws {
        _ = try call(.confirm, central, matches)
    }

    /// The bonded centrals, in the daemon's order (by address).
    public func bonds() throws -> [Bond] {
        try decoded(.bonds, try call(.bonds), Entries<String>.self).entries.map { Bond(central: $0.key, name: $0.value.isEmpty ? nil : $0.value) }
    }

    /// Removes the bond with a central: one that bonded in a window of bleadvd's, or any when
    /// `any` is true.
    public func forget(_ central: String, any: Bool = false) throws {
        _ = try call(.forget, central, any)
    }

    /// Records an existing bond with `central` as one of bleadvd's (secured characteristics).
    public func adopt(_ central: String) throws {
        _ = try call(.adopt, central)
    }

    /// The centrals connected now, by address.
    public func centrals() throws -> [CentralState] {
        (try call(.centrals)[0].dictionaryEntries ?? []).compactMap { entry in
            entry.key.string.flatMap { CentralState(address: $0, entry.value) }
        }
    }

    /// Ends the link with a connected central.
    public func disconnect(_ central: String) throws {
        _ = try call(.disconnect, central)
    }

    /// Calls `method` with one argument, encoded as the handler decodes it (``ControlArgument``).
    func call<A: ControlArgument>(_ method: ControlAPI.Method, _ a: A) throws -> [DBusValue] {
        try call(method, [a.dbusValue])
    }

    /// Calls `method` with two arguments, encoded as the handler decodes them.
    func call<A: ControlArgument, B: ControlArgument>(_ method: ControlAPI.Method, _ a: A, _ b: B) throws -> [DBusValue] {
        try call(method, [a.dbusValue, b.dbusValue])
    }

    /// `reply` to `method` as one `A`, through the codec its handler encoded it with.
    func decoded<A: ControlArgument>(_ method: ControlAPI.Method, _ reply: [DBusValue], _ a: A.Type) throws -> A {
        guard let value = reply.decoded(A.self) else { throw Self.unexpected(method) }
        return value
    }

    /// `reply` to `method` as `A` and `B`.
    func decoded<A: ControlArgument, B: ControlArgument>(_ method: ControlAPI.Method, _ reply: [DBusValue], _ a: A.Type, _ b: B.Type) throws -> (A, B) {
        guard let values = reply.decoded(A.self, B.self) else { throw Self.unexpected(method) }
        return values
    }

    /// A reply that is not as the contract declares it.
    static func unexpected(_ method: ControlAPI.Method) -> DBusError {
        DBusError(.invalidArgs, "the daemon's \(method.name) reply is not as the control API declares it")
    }

    /// Calls `method`; a reply that is not what the contract declares is refused.
    func call(_ method: ControlAPI.Method, _ arguments: [DBusValue] = []) throws -> [DBusValue] {
        assert(arguments.map(\.type) == method.inputs.map(\.type), "\(method.name)'s arguments are not as ControlAPI.Method declares")
        return try connection.call(
            destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface, member: method.name,
            arguments, expecting: DBusSignature(types: method.outputs.map(\.type)), timeout: timeout)
    }
}
