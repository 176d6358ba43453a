/// An interface that an exported object implements: its methods, properties and signals.
///
/// The connection answers `Introspect`, `Properties.Get/GetAll/Set` and `GetManagedObjects`
/// from this description, checks every incoming call's signature against it, and checks every
/// reply a handler returns against the declared outputs.
public struct DBusInterface: Sendable {
    /// The interface name, e.g. `org.bluez.LEAdvertisement1`.
    public var name: String
    /// The methods, by name.
    public var methods: [DBusMethod]
    /// The properties with their initial values.
    public var properties: [DBusProperty]
    /// The signals it may emit (for introspection).
    public var signals: [DBusSignalDescription]

    /// An interface description.
    public init(
        name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [],
        signals: [DBusSignalDescription] = []
    ) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    /// The properties peers may read, as `GetAll` and `GetManagedObjects` report them (`a{sv}`).
    var readableValues: DBusValue {
        .variantDictionary(Dictionary(
            properties.filter(\.access.isReadable).map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }))
    }

    /// Checks every name and type, so nothing malformed reaches libdbus or a peer.
    func validate() throws(DBusError) {
        try DBusName.validateInterface(name)
        for method in methods {
            try DBusName.validateMember(method.name)
            _ = try DBusSignature(DBusSignature(types: method.inputs.map(\.type)).text)
            _ = try DBusSignature(DBusSignature(types: method.outputs.map(\.type)).text)
        }
        for property in properties {
            try DBusName.validateMember(property.name)
            try property.value.validate()
            guard property.value.type == property.type else {
                throw .invalidArgs(
                    "property \(name).\(property.name) is declared '\(property.type)' but its value is '\(property.value.type)'")
            }
        }
        for signal in signals {
            try DBusName.validateMember(signal.name)
        }
    }
}

/// A named, typed argument of a method or signal.
public struct DBusArgument: Sendable, Hashable {
    /// The argument's name (for introspection).
    public var name: String
    /// The argument's type.
    public var type: DBusType

    /// An argument.
    public init(_ name: String, _ type: DBusType) {
        self.name = name
        self.type = type
    }
}

/// An incoming method call, as a handler sees it.
public struct DBusMethodCall: Sendable {
    /// The whole message (sender, path, flags).
    public var message: DBusMessage
    /// The arguments, already checked against the method's declared inputs.
    public var arguments: [DBusValue] { message.body }
    /// The unique name of the caller.
    public var sender: String? { message.sender }
}

/// A method of an exported interface.
public struct DBusMethod: Sendable {
    /// What a method does when called: returns the reply's arguments or throws a
    /// ``DBusError`` to send as the error reply. It may call out on the same connection.
    public typealias Handler = @Sendable (DBusMethodCall) async throws -> [DBusValue]

    /// The method name.
    public var name: String
    /// The input arguments; a call with any other signature gets `InvalidArgs`.
    public var inputs: [DBusArgument]
    /// The output arguments; the handler's result must match them.
    public var outputs: [DBusArgument]
    /// The handler.
    public var handler: Handler

    /// A method.
    public init(
        _ name: String, inputs: [DBusArgument] = [], outputs: [DBusArgument] = [],
        handler: @escaping Handler
    ) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.handler = handler
    }
}

/// A property of an exported interface and its current value.
public struct DBusProperty: Sendable {
    /// Who may change a property over the bus.
    public enum Access: Sendable, Hashable {
        /// Peers may read it.
        case read
        /// Peers may read and set it.
        case readWrite
        /// Peers may set it but not read it; it is left out of `GetAll` and `GetManagedObjects`.
        case write

        /// Whether peers may read it.
        public var isReadable: Bool { self != .write }
        /// Whether peers may set it.
        public var isWritable: Bool { self != .read }
    }

    /// Decides on a value a peer sets: return normally to accept it, throw a ``DBusError``
    /// to refuse it. Runs on the connection's executor; keep it short.
    public typealias SetHandler = @Sendable (DBusValue) throws -> Void

    /// The property name.
    public var name: String
    /// The property's type.
    public var type: DBusType
    /// The current value.
    public var value: DBusValue
    /// Who may change it.
    public var access: Access
    /// Whether changes are announced with `PropertiesChanged`.
    public var emitsChanged: Bool
    /// Called before a peer's `Set` takes effect.
    public var onSet: SetHandler?

    /// A property with its initial value; its type is the value's.
    public init(
        _ name: String, value: DBusValue, access: Access = .read, emitsChanged: Bool = true,
        onSet: SetHandler? = nil
    ) {
        self.name = name
        self.type = value.type
        self.value = value
        self.access = access
        self.emitsChanged = emitsChanged
        self.onSet = onSet
    }
}

/// A signal an interface may emit.
public struct DBusSignalDescription: Sendable, Hashable {
    /// The signal name.
    public var name: String
    /// Its arguments.
    public var arguments: [DBusArgument]

    /// A signal description.
    public init(_ name: String, arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// An object exported on a connection: the interfaces at one path.
struct ExportedObject {
    var interfaces: [String: DBusInterface]
    /// Interface names in the order they were exported, for stable introspection.
    var order: [String]
    /// The one unique name whose calls it answers; nil for anyone the bus lets through.
    var caller: String?
}
