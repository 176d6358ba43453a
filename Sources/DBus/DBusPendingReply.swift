internal import CDBus
internal import Events

/// One outstanding method call: the libdbus pending call and the task waiting for it.
/// Touched only on the connection's event loop.
final class PendingReply: @unchecked Sendable {
    private var pending: OpaquePointer?
    private var continuation: CheckedContinuation<DBusMessage, any Error>?
    /// The outcome when it came before anyone waited (a cancellation, a disconnect).
    private var early: Result<DBusMessage, any Error>?

    private let eventLoop: EventLoop

    /// Takes over the caller's reference to the pending call of a connection served on
    /// `eventLoop`.
    init(_ pending: OpaquePointer, eventLoop: EventLoop) {
        self.pending = pending
        self.eventLoop = eventLoop
    }

    func wait(_ continuation: CheckedContinuation<DBusMessage, any Error>) {
        eventLoop.checkIsolated()
        if let early {
            continuation.resume(with: early)
            return
        }
        self.continuation = continuation
        guard let pending else { return }
        let this = Unmanaged.passRetained(self).toOpaque()
        let set = dbus_pending_call_set_notify(
            pending,
            { pending, data in
                Unmanaged<PendingReply>.fromOpaque(data!).takeUnretainedValue().complete(pending!)
            },
            this,
            { data in Unmanaged<PendingReply>.fromOpaque(data!).release() })
        if set == 0 {
            Unmanaged<PendingReply>.fromOpaque(this).release()
            finish(.failure(DBusError(.noMemory, "out of memory waiting for a reply")))
        } else if dbus_pending_call_get_completed(pending) != 0 {
            complete(pending)
        }
    }

    /// Stops waiting: the task gets `error`, and a reply that still arrives is dropped.
    func abandon(with error: any Error) {
        eventLoop.checkIsolated()
        guard let pending else { return }
        dbus_pending_call_cancel(pending)
        finish(.failure(error))
    }

    private func complete(_ pending: OpaquePointer) {
        guard let reply = dbus_pending_call_steal_reply(pending) else { return }
        defer { dbus_message_unref(reply) }
        finish(Result { try DBusMessage(raw: reply) })
    }

    private func finish(_ result: Result<DBusMessage, any Error>) {
        guard let pending else { return }
        self.pending = nil
        dbus_pending_call_unref(pending)
        if let continuation {
            self.continuation = nil
            continuation.resume(with: result)
        } else {
            early = result
        }
    }
}
