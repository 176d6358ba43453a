/// A D-Bus message as plain Swift values: a method call, a method return, an error or a signal.
///
/// Build the ones you send with ``methodCall(destination:path:interface:member:body:)`` and
/// ``signal(path:interface:member:body:destination:)``; the connection validates every name and value before
/// handing the message to libdbus.
public struct DBusMessage: Sendable, Hashable {
    /// The four kinds of D-Bus message.
    public enum Kind: Sendable, Hashable {
        /// A method call, answered by a method return or an error.
        case methodCall
        /// A successful reply.
        case methodReturn
        /// An error reply.
        case error
        /// A signal.
        case signal
    }

    /// The most values a received message is unpacked into (each array element, dictionary
    /// entry, structure field and variant counts one; a byte array one per byte): far more
    /// than BlueZ's replies or bleadvd's calls hold, and few enough that a hostile message
    /// costs at most a small multiple of its size. A message with more is refused whole.
    public static let maximumReceivedValues = 1 << 18
    /// The most values a method call to an exported object is unpacked into: calls come from
    /// anyone the bus lets through, and no method exported here takes more.
    public static let maximumCallValues = 1 << 14

    /// The kind of message.
    public var kind: Kind
    /// The object path (calls and signals).
    public var path: DBusObjectPath?
    /// The interface (calls and signals; optional on calls).
    public var interface: String?
    /// The method or signal name.
    public var member: String?
    /// The error name (errors only).
    public var errorName: String?
    /// The bus name the message is addressed to.
    public var destination: String?
    /// The unique bus name of the sender, set by the bus on messages received.
    public var sender: String?
    /// The serial number the sender gave the message (0 until sent).
    public var serial: UInt32 = 0
    /// The serial of the call this message replies to (replies and errors).
    public var replySerial: UInt32 = 0
    /// Whether the caller asked for no reply.
    public var noReplyExpected = false
    /// Whether the bus may start the destination's service to deliver a call addressed to a
    /// well-known name nobody owns (bus activation). False sets the header's NO_AUTO_START
    /// flag: the call then fails at once with `ServiceUnknown`, rather than being held and
    /// delivered to whichever process the bus starts. A call to a unique name never activates.
    public var autoStart = true
    /// The arguments.
    public var body: [DBusValue]

    /// The signature of the body, e.g. `sa{sv}`.
    public var signature: DBusSignature { DBusSignature(types: body.map(\.type)) }

    /// A method call.
    public static func methodCall(
        destination: String?, path: DBusObjectPath, interface: String?, member: String,
        body: [DBusValue] = []
    ) -> DBusMessage {
        DBusMessage(
            kind: .methodCall, path: path, interface: interface, member: member, destination: destination,
            body: body)
    }

    /// A signal: a broadcast, or directed to `destination` (a unique name) alone.
    public static func signal(
        path: DBusObjectPath, interface: String, member: String, body: [DBusValue] = [], destination: String? = nil
    ) -> DBusMessage {
        DBusMessage(kind: .signal, path: path, interface: interface, member: member, destination: destination, body: body)
    }

    /// A description of what the message is, for logs and errors: `Interface.Member` or the error name.
    var what: String {
        switch kind {
        case .error: errorName ?? "error"
        case .methodReturn: "reply"
        default: [interface, member].compactMap { $0 }.joined(separator: ".")
        }
    }

    /// Checks that the body has exactly the given signature.
    /// - Throws: ``DBusError`` (`InvalidArgs`) naming both signatures.
    public func expectSignature(_ expected: DBusSignature) throws(DBusError) {
        guard signature == expected else {
            throw .invalidArgs("\(what) has signature '\(signature.text)', expected '\(expected.text)'")
        }
    }

    /// The error this message carries, when it is an error reply.
    public var error: DBusError? {
        guard kind == .error else { return nil }
        return DBusError(DBusError.Name(rawValue: errorName ?? DBusError.Name.failed.rawValue), body.first?.string ?? "")
    }
}
