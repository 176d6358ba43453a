internal import CDBus
public import Events

/// A private connection to a message bus, served on one `EventLoop` (module `Events`).
///
/// The actor's executor is the event loop that libdbus's file descriptors, timeouts and
/// message dispatch run on, so incoming calls, replies and signals are handled in order with
/// no lock and no polling thread. Calls never block the loop: they are libdbus pending calls
/// bridged to `async`, so a peer may call back into this connection while a call waits (BlueZ
/// does exactly that during `RegisterAdvertisement`).
///
/// The connection never exits the process: when the bus goes away, pending calls fail with
/// `Disconnected`/`NoReply`, signal streams finish, and ``events()`` reports `.disconnected`.
public actor DBusConnection {
    /// Which bus to connect to.
    public enum Bus: Sendable, Hashable {
        /// The system bus (libdbus honours `DBUS_SYSTEM_BUS_ADDRESS`).
        case system
        /// The session bus (`DBUS_SESSION_BUS_ADDRESS`).
        case session
        /// A bus at an address such as `unix:path=/run/dbus/system_bus_socket`.
        case address(String)
    }

    /// Something that happened to the connection itself.
    public enum Event: Sendable, Hashable {
        /// The bus went away or the connection was closed; nothing more will arrive.
        case disconnected
    }

    nonisolated let loop: DBusEventLoop
    nonisolated var raw: OpaquePointer { loop.connection }

    /// The event loop this connection runs on: the executor of this actor, and the task
    /// executor of exported methods' handlers.
    public nonisolated var eventLoop: EventLoop { loop.eventLoop }

    /// The connection's unique name on the bus, e.g. `:1.42`.
    public nonisolated let uniqueName: String

    /// Runs this actor on the connection's event loop.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.eventLoop.asUnownedSerialExecutor() }

    /// Whether the connection is still open.
    public internal(set) var isConnected = true

    var nextID: UInt64 = 0
    var eventListeners: [UInt64: AsyncStream<Event>.Continuation] = [:]
    var subscriptions: [UInt64: Subscription] = [:]
    var trackedOwners: [String: TrackedOwner] = [:]
    /// How many received signals were unpacked (something took them on their header).
    var unpackedSignals = 0
    var objects: [DBusObjectPath: ExportedObject] = [:]
    /// The paths served as object managers, each with the one caller it answers (nil: anyone).
    var objectManagers: [DBusObjectPath: String?] = [:]
    /// Calls waiting for a reply. libdbus does not complete them when the connection drops,
    /// so the connection fails them itself.
    var outstanding: [ObjectIdentifier: PendingReply] = [:]

    private init(loop: DBusEventLoop, uniqueName: String) {
        self.loop = loop
        self.uniqueName = uniqueName
    }

    deinit {
        loop.finish()
    }

    /// Opens a private connection to a bus and registers with it (`Hello`, which blocks the
    /// caller for that round trip).
    /// - Parameters:
    ///   - bus: the bus.
    ///   - eventLoop: the loop to serve the connection on; by default one on a thread of its
    ///     own, which ends with the connection.
    /// - Throws: ``DBusError`` when the bus cannot be reached or refuses the connection.
    public static func connect(to bus: Bus, on eventLoop: EventLoop? = nil) async throws -> DBusConnection {
        let loop: EventLoop
        if let eventLoop {
            loop = eventLoop
        } else {
            do throws(EventLoopError) {
                loop = try EventLoop.onNewThread(name: "dbus")
            } catch {
                throw DBusError(.failed, error.message)
            }
        }
        let opened = try bus.open()
        let name = String(cString: dbus_bus_get_unique_name(opened))
        let connection = DBusConnection(loop: DBusEventLoop(connection: opened, eventLoop: loop), uniqueName: name)
        await connection.start()
        return connection
    }

    private func start() {
        let box = Unmanaged.passRetained(WeakConnection(self)).toOpaque()
        dbus_connection_add_filter(
            raw,
            { _, message, data in
                let box = Unmanaged<WeakConnection>.fromOpaque(data!).takeUnretainedValue()
                guard let connection = box.connection, let message else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
                let incoming = RawMessage(pointer: message)
                let handled = connection.assumeIsolated { $0.receive(incoming) }
                return handled ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            },
            box,
            { data in Unmanaged<WeakConnection>.fromOpaque(data!).release() })
        loop.install()
    }

    /// Closes the connection. Pending calls fail, streams finish, ``events()`` reports
    /// `.disconnected`.
    public func close() {
        guard isConnected else { return }
        dbus_connection_close(raw)
        loop.scheduleDrain()
    }

    /// A stream of what happens to the connection. A closed connection yields `.disconnected`
    /// at once and finishes.
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        guard isConnected else {
            continuation.yield(.disconnected)
            continuation.finish()
            return stream
        }
        let id = makeID()
        eventListeners[id] = continuation
        continuation.onTermination = { [weak self, eventLoop] _ in
            Task(executorPreference: eventLoop) { await self?.removeEventListener(id) }
        }
        return stream
    }

    private func removeEventListener(_ id: UInt64) {
        eventListeners[id] = nil
    }

    func publish(_ event: Event) {
        for listener in eventListeners.values { listener.yield(event) }
    }

    func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    // MARK: Sending

    /// The default time a call waits for its reply.
    public static let defaultTimeout: Duration = .seconds(25)

    /// Sends a method call and waits for its reply, serving other messages meanwhile.
    /// - Parameters:
    ///   - message: a method call.
    ///   - timeout: how long to wait before failing with `NoReply`.
    /// - Returns: the method return.
    /// - Throws: ``DBusError``: the peer's error reply, `NoReply` on timeout, `Disconnected`,
    ///   or `InvalidArgs` when the message could not be sent as given; `CancellationError`
    ///   when the task is cancelled.
    public func call(_ message: DBusMessage, timeout: Duration = defaultTimeout) async throws -> DBusMessage {
        guard message.kind == .methodCall else { throw DBusError.invalidArgs("call() sends method calls only") }
        let outgoing = try message.makeRaw()
        defer { dbus_message_unref(outgoing) }
        guard isConnected else { throw DBusError(.disconnected, "the connection is closed") }
        var pendingCall: OpaquePointer?
        guard dbus_connection_send_with_reply(raw, outgoing, &pendingCall, timeout.dbusMilliseconds) != 0 else {
            throw DBusError(.noMemory, "out of memory sending \(message.what)")
        }
        guard let pendingCall else { throw DBusError(.disconnected, "the connection is closed") }
        let pending = PendingReply(pendingCall, eventLoop: eventLoop)
        outstanding[ObjectIdentifier(pending)] = pending
        defer { outstanding[ObjectIdentifier(pending)] = nil }
        let reply = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // This closure is not isolated to the actor: it runs on the caller's executor.
                eventLoop.execute { pending.wait(continuation) }
            }
        } onCancel: {
            eventLoop.execute { pending.abandon(with: CancellationError()) }
        }
        if let error = reply.error { throw error }
        return reply
    }

    /// Calls a method and returns the reply's arguments, optionally checking their signature.
    /// With `autoStart` false the call forbids bus activation (``DBusMessage/autoStart``).
    /// - Throws: as ``call(_:timeout:)``, and `InvalidArgs` when the reply's signature is not
    ///   `expecting`.
    public func call(
        destination: String?, path: DBusObjectPath, interface: String?, member: String,
        _ arguments: [DBusValue] = [], expecting: DBusSignature? = nil, timeout: Duration = defaultTimeout,
        autoStart: Bool = true
    ) async throws -> [DBusValue] {
        var message = DBusMessage.methodCall(
            destination: destination, path: path, interface: interface, member: member, body: arguments)
        message.autoStart = autoStart
        return try await call(message, timeout: timeout).body(expecting: expecting, replyingTo: message)
    }

    /// Sends a message without waiting for a reply (signals, replies, fire-and-forget calls).
    /// - Throws: ``DBusError`` when the message is invalid or the connection is closed.
    public func send(_ message: DBusMessage) throws {
        let outgoing = try message.makeRaw()
        defer { dbus_message_unref(outgoing) }
        guard isConnected else { throw DBusError(.disconnected, "the connection is closed") }
        guard dbus_connection_send(raw, outgoing, nil) != 0 else {
            throw DBusError(.noMemory, "out of memory sending \(message.what)")
        }
    }

    /// Emits a signal from an object of this connection: a broadcast, which every connection
    /// whose match rule takes it receives, or with a `destination` (a unique name) a signal
    /// the bus delivers to that connection alone.
    public func emit(
        path: DBusObjectPath, interface: String, member: String, _ arguments: [DBusValue] = [], to destination: String? = nil
    ) throws {
        try send(.signal(path: path, interface: interface, member: member, body: arguments, destination: destination))
    }

}

/// The filter's reference to its connection: it must not keep the connection alive.
private final class WeakConnection: @unchecked Sendable {
    weak var connection: DBusConnection?

    init(_ connection: DBusConnection) {
        self.connection = connection
    }
}

extension DBusError {
    /// Converts a filled-in libdbus error.
    init(from error: CDBus.DBusError, fallback: String) {
        guard error.name != nil else {
            self.init(.failed, fallback)
            return
        }
        self.init(
            Name(rawValue: String(cString: error.name)),
            error.message.map { String(cString: $0) } ?? fallback)
    }
}

extension DBusConnection.Bus {
    /// Opens a private connection to this bus and registers with it (`Hello`), blocking; the
    /// process is never exited when it drops.
    func open() throws(DBusError) -> OpaquePointer {
        if case .address(let address) = self, address.utf8.contains(0) {
            throw DBusError.invalidArgs("bus address contains a NUL character")
        }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        var connection: OpaquePointer?
        switch self {
        case .system: connection = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
        case .session: connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error)
        case .address(let address):
            connection = dbus_connection_open_private(address, &error)
            if let opened = connection, dbus_bus_register(opened, &error) == 0 {
                dbus_connection_close(opened)
                dbus_connection_unref(opened)
                connection = nil
            }
        }
        guard let connection else { throw DBusError(from: error, fallback: "cannot connect to the \(self) bus") }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        return connection
    }
}

extension Duration {
    /// libdbus's timeout: whole milliseconds, at least 1, at most `Int32.max`.
    var dbusMilliseconds: Int32 {
        let (seconds, attoseconds) = components
        let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(ms, 1))
    }
}

extension DBusMessage {
    /// This reply's arguments, after checking their signature against `expecting`, if given.
    /// - Throws: `InvalidArgs` naming the call and both signatures when they differ.
    func body(expecting: DBusSignature?, replyingTo call: DBusMessage) throws(DBusError) -> [DBusValue] {
        if let expecting {
            do {
                try expectSignature(expecting)
            } catch {
                throw DBusError.invalidArgs(
                    "reply to \(call.what) has signature '\(signature.text)', expected '\(expecting.text)'")
            }
        }
        return body
    }
}
