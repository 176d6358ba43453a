internal import CDBus

/// A private connection for a short-lived client: one thread, no event loop. Each call blocks
/// until its reply, its error or its timeout; nothing else is read or dispatched meanwhile.
///
/// `bleadvctl` uses it: a command makes one or two calls and exits, and starting no threads and
/// no executor is what brings its cost close to a C client's. A program that serves objects,
/// follows signals or makes calls from several tasks wants ``DBusConnection``.
public final class DBusBlockingConnection {
    private let raw: OpaquePointer

    /// The connection's unique name on the bus, e.g. `:1.42`.
    public let uniqueName: String

    /// Connects to a bus and registers with it (`Hello`).
    /// - Throws: ``DBusError`` when the bus cannot be reached or refuses the connection.
    public init(bus: DBusConnection.Bus) throws(DBusError) {
        raw = try bus.open()
        uniqueName = String(cString: dbus_bus_get_unique_name(raw))
    }

    deinit {
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
    }

    /// Sends a method call and waits for its reply.
    /// - Throws: ``DBusError``: the error the peer replied with, `NoReply` after `timeout`,
    ///   `Disconnected` when the bus went away.
    public func call(_ message: DBusMessage, timeout: Duration = DBusConnection.defaultTimeout) throws(DBusError) -> DBusMessage {
        guard message.kind == .methodCall else { throw DBusError.invalidArgs("call() sends method calls only") }
        let outgoing = try message.makeRaw()
        defer { dbus_message_unref(outgoing) }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(raw, outgoing, timeout.dbusMilliseconds, &error) else {
            throw DBusError(from: error, fallback: "no reply to \(message.what)")
        }
        defer { dbus_message_unref(reply) }
        return try DBusMessage(raw: reply)
    }

    /// Calls a method and returns the reply's arguments, optionally checking their signature.
    /// - Throws: as ``call(_:timeout:)``, and `InvalidArgs` when the reply's signature is not
    ///   `expecting`.
    public func call(
        destination: String?, path: DBusObjectPath, interface: String?, member: String,
        _ arguments: [DBusValue] = [], expecting: DBusSignature? = nil, timeout: Duration = DBusConnection.defaultTimeout
    ) throws(DBusError) -> [DBusValue] {
        let message = DBusMessage.methodCall(
            destination: destination, path: path, interface: interface, member: member, body: arguments)
        return try call(message, timeout: timeout).body(expecting: expecting, replyingTo: message)
    }
}
