/// An error on the bus, or found before anything reached the bus: a D-Bus error name and a
/// message a person can read.
///
/// Errors that a peer returns keep the peer's name (e.g. `org.bluez.Error.Failed`); errors this
/// library raises itself use the standard `org.freedesktop.DBus.Error.*` names listed in
/// ``Name``.
public struct DBusError: Error, Hashable, Sendable {
    /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.NoReply`.
    public var name: Name
    /// The human-readable message.
    public var message: String

    /// An error with the given name and message.
    public init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }

    /// A D-Bus error name. Compare against the constants, or read ``rawValue`` for names this
    /// library does not know.
    public struct Name: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
        /// The error name as it travels on the bus.
        public let rawValue: String

        /// Wraps an error name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Wraps an error name given as a literal.
        public init(stringLiteral value: String) { self.rawValue = value }

        /// `org.freedesktop.DBus.Error.Failed`: a generic failure.
        public static let failed: Name = "org.freedesktop.DBus.Error.Failed"
        /// `org.freedesktop.DBus.Error.NoReply`: the call timed out.
        public static let noReply: Name = "org.freedesktop.DBus.Error.NoReply"
        /// `org.freedesktop.DBus.Error.Disconnected`: the connection is closed.
        public static let disconnected: Name = "org.freedesktop.DBus.Error.Disconnected"
        /// `org.freedesktop.DBus.Error.ServiceUnknown`: no one owns the destination name.
        public static let serviceUnknown: Name = "org.freedesktop.DBus.Error.ServiceUnknown"
        /// `org.freedesktop.DBus.Error.NameHasNoOwner`: the name has no owner.
        public static let nameHasNoOwner: Name = "org.freedesktop.DBus.Error.NameHasNoOwner"
        /// `org.freedesktop.DBus.Error.UnknownMethod`: no such method on the object.
        public static let unknownMethod: Name = "org.freedesktop.DBus.Error.UnknownMethod"
        /// `org.freedesktop.DBus.Error.UnknownObject`: no object at that path.
        public static let unknownObject: Name = "org.freedesktop.DBus.Error.UnknownObject"
        /// `org.freedesktop.DBus.Error.UnknownInterface`: the object has no such interface.
        public static let unknownInterface: Name = "org.freedesktop.DBus.Error.UnknownInterface"
        /// `org.freedesktop.DBus.Error.UnknownProperty`: the interface has no such property.
        public static let unknownProperty: Name = "org.freedesktop.DBus.Error.UnknownProperty"
        /// `org.freedesktop.DBus.Error.PropertyReadOnly`: the property cannot be set.
        public static let propertyReadOnly: Name = "org.freedesktop.DBus.Error.PropertyReadOnly"
        /// `org.freedesktop.DBus.Error.InvalidArgs`: arguments of the wrong type or value.
        public static let invalidArgs: Name = "org.freedesktop.DBus.Error.InvalidArgs"
        /// `org.freedesktop.DBus.Error.InvalidSignature`: a malformed type signature.
        public static let invalidSignature: Name = "org.freedesktop.DBus.Error.InvalidSignature"
        /// `org.freedesktop.DBus.Error.AccessDenied`: the bus policy refused the message.
        public static let accessDenied: Name = "org.freedesktop.DBus.Error.AccessDenied"
        /// `org.freedesktop.DBus.Error.NoMemory`: libdbus ran out of memory.
        public static let noMemory: Name = "org.freedesktop.DBus.Error.NoMemory"
        /// A message holds more than this library unpacks (``DBusMessage/maximumReceivedValues``).
        public static let limitsExceeded: Name = "org.freedesktop.DBus.Error.LimitsExceeded"
        /// `bleadvd.DBus.Error.NameTaken`: this library's error when a well-known name is owned
        /// by another connection already.
        public static let nameTaken: Name = "bleadvd.DBus.Error.NameTaken"
        /// `org.freedesktop.DBus.Error.NoServer`, `FileNotFound` and similar: the bus cannot be reached.
        public static let noServer: Name = "org.freedesktop.DBus.Error.NoServer"
    }
}

extension DBusError: CustomStringConvertible {
    /// `name: message`.
    public var description: String { "\(name.rawValue): \(message)" }
}

extension DBusError.Name: CustomStringConvertible {
    /// The error name.
    public var description: String { rawValue }
}

extension DBusError {
    /// An `InvalidArgs` error, the name this library uses for input it refuses before libdbus
    /// sees it.
    static func invalidArgs(_ message: String) -> DBusError {
        DBusError(.invalidArgs, message)
    }
}
