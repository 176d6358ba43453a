public import DBus

/// A signal of the control interface, declared once: its member name, its payload's fields
/// (each named, typed and read by key path), and, on the type, its documentation. The service
/// exports it, the daemon emits it (`emit(_:to:)` on its bus port), `bleadvctl watch` and
/// `pair` decode it, the in-memory bus of the daemon's tests records it, and the contract test
/// holds the committed interface file to it: each through ``arguments``, ``body`` and
/// ``init(body:)``, never by position.
///
/// A payload is a struct of ``ControlArgument`` values with defaults (the codec fills a blank
/// one, ``init()``), listed in ``fields`` in the order D-Bus carries them.
public protocol ControlSignal: Sendable, Equatable {
    /// The member name (`StateChanged`).
    static var name: String { get }
    /// The payload's fields, in the order the signal carries them.
    static var fields: [ControlField<Self>] { get }
    /// A blank payload, which decoding fills.
    init()
}

extension ControlSignal {
    /// Its arguments, as the interface declares them.
    public static var arguments: [DBusArgument] { fields.map(\.argument) }

    /// The payload as the signal carries it.
    public var body: [DBusValue] { Self.fields.map { $0.encode(self) } }

    /// The payload a signal's body carries; nil when it is not this signal's (its arguments'
    /// number or types differ).
    public init?(body: [DBusValue]) {
        guard body.count == Self.fields.count else { return nil }
        var payload = Self()
        for (field, value) in zip(Self.fields, body) {
            guard field.decode(&payload, value) else { return nil }
        }
        self = payload
    }

    /// The payload of `message` when it is this signal of the control interface; nil for another.
    public init?(_ message: DBusMessage) {
        guard message.interface == ControlAPI.interface, message.member == Self.name else { return nil }
        self.init(body: message.body)
    }
}

/// One field of a signal's payload: its argument's name, and the property that holds it.
public struct ControlField<Payload>: Sendable {
    /// The argument, named and typed as the interface declares it.
    public let argument: DBusArgument
    let encode: @Sendable (Payload) -> DBusValue
    let decode: @Sendable (inout Payload, DBusValue) -> Bool

    /// The argument `name`, held by `property`; its D-Bus type is the property's.
    public init<Value: ControlArgument>(_ name: String, _ property: any WritableKeyPath<Payload, Value> & Sendable) {
        argument = DBusArgument(name, Value.dbusType)
        encode = { $0[keyPath: property].dbusValue }
        decode = { payload, value in
            guard let decoded = Value(dbusValue: value) else { return false }
            payload[keyPath: property] = decoded
            return true
        }
    }
}
