/// The standard interface through which a peer's properties are read and written
/// (`Get`, `GetAll`, `Set`, and the `PropertiesChanged` signal).
public enum DBusProperties {
    /// The interface's name.
    public static let interface = "org.freedesktop.DBus.Properties"
    /// The signal an object sends when its properties change.
    public static let changed = "PropertiesChanged"
}

/// An object of another peer as this connection calls it: its methods, and its properties
/// through ``DBusProperties``, whose members and signatures are written here once for every
/// peer a client calls.
public struct DBusProxy: Sendable {
    /// The connection the calls go through.
    public let connection: DBusConnection
    /// The peer: a well-known name (`org.freedesktop.NetworkManager`) or a unique one (`:1.42`).
    public let destination: String
    /// The object's path at the peer.
    public let path: DBusObjectPath
    /// How long each call waits for its reply.
    public let timeout: Duration
    /// Whether a call may start the destination by bus activation (``DBusMessage/autoStart``).
    public let autoStart: Bool

    /// The object at `path` of `destination`, called through `connection`.
    public init(
        _ connection: DBusConnection, destination: String, path: DBusObjectPath,
        timeout: Duration = DBusConnection.defaultTimeout, autoStart: Bool = true
    ) {
        self.connection = connection
        self.destination = destination
        self.path = path
        self.timeout = timeout
        self.autoStart = autoStart
    }

    /// Calls `interface.member` on the object and returns the reply's arguments.
    /// - Throws: as ``DBusConnection/call(destination:path:interface:member:_:expecting:timeout:autoStart:)``.
    public func call(
        _ interface: String, _ member: String, _ arguments: [DBusValue] = [], expecting: DBusSignature? = nil
    ) async throws -> [DBusValue] {
        try await connection.call(
            destination: destination, path: path, interface: interface, member: member, arguments,
            expecting: expecting, timeout: timeout, autoStart: autoStart)
    }

    /// The value of the property `name` of `interface` (`Properties.Get`), out of its variant.
    /// - Throws: the peer's error, or `InvalidArgs` when the reply is not one variant.
    public func property(_ name: String, of interface: String) async throws -> DBusValue {
        let reply = try await call(DBusProperties.interface, "Get", [.string(interface), .string(name)], expecting: "v")
        guard let value = reply[0].variantValue else {
            throw DBusError.invalidArgs("\(interface).\(name) came back without a value")
        }
        return value
    }

    /// Every property of `interface` (`Properties.GetAll`), by name.
    /// - Throws: the peer's error, or `InvalidArgs` when the reply is not a{sv}.
    public func properties(of interface: String) async throws -> [String: DBusValue] {
        let reply = try await call(DBusProperties.interface, "GetAll", [.string(interface)], expecting: "a{sv}")
        guard let values = reply[0].variantDictionary else {
            throw DBusError.invalidArgs("the properties of \(interface) came back as \(reply[0].type), not a{sv}")
        }
        return values
    }

    /// Sets the property `name` of `interface` to `value` (`Properties.Set`).
    /// - Throws: the peer's error (a read-only property, a value of another type, a refusal).
    public func setProperty(_ name: String, of interface: String, to value: DBusValue) async throws {
        _ = try await call(DBusProperties.interface, "Set", [.string(interface), .string(name), .variant(value)], expecting: "")
    }
}
