internal import CDBus
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Runs one libdbus connection on one serial `DispatchQueue`: file-descriptor watches and
/// timeouts become DispatchSources on that queue, and incoming messages are dispatched there.
///
/// Nothing polls: an idle connection has no timer and no thread awake. Every libdbus
/// connection function is called on the queue only, so the watch and timeout callbacks, which
/// libdbus runs with the connection lock held, only ever touch DispatchSources.
final class DBusEventLoop: @unchecked Sendable {
    let queue: DispatchQueue
    let connection: OpaquePointer
    /// Set once the connection is closed and released; nothing touches it afterwards.
    private var finished = false
    /// libdbus's timeouts (one per pending call, 25 s by default) on one timer.
    private(set) lazy var timeouts = TimeoutScheduler(loop: self)

    /// The executor of the connection's actor, on the same queue.
    let executor: DBusQueueExecutor

    init(connection: OpaquePointer, label: String) {
        self.connection = connection
        self.queue = DispatchQueue(label: label)
        self.executor = DBusQueueExecutor(queue: queue)
    }

    /// Runs `work` on the queue: right away when already there, else as soon as it is free.
    func run(_ work: @escaping @Sendable () -> Void) {
        if executor.isCurrent {
            work()
        } else {
            queue.async(execute: work)
        }
    }

    /// Hooks the loop into libdbus. Call once, on the queue. The connection keeps the loop alive
    /// until it is finalized.
    func install() {
        dispatchPrecondition(condition: .onQueue(queue))
        let this = Unmanaged.passRetained(self).toOpaque()
        dbus_connection_set_watch_functions(
            connection,
            { watch, data in DBusEventLoop.from(data).add(watch: watch!) },
            { watch, _ in WatchSource.from(watch!)?.cancel() },
            { watch, _ in WatchSource.from(watch!)?.update() },
            this, nil)
        dbus_connection_set_timeout_functions(
            connection,
            { timeout, data in DBusEventLoop.from(data).timeouts.add(timeout!) },
            { timeout, data in DBusEventLoop.from(data).timeouts.remove(timeout!) },
            { timeout, data in DBusEventLoop.from(data).timeouts.update(timeout!) },
            this, nil)
        dbus_connection_set_wakeup_main_function(
            connection, { data in DBusEventLoop.from(data).scheduleDrain() }, this, nil)
        // The last of these callbacks releases the loop when the connection is finalized.
        dbus_connection_set_dispatch_status_function(
            connection,
            { _, status, data in
                if status == DBUS_DISPATCH_DATA_REMAINS { DBusEventLoop.from(data).scheduleDrain() }
            },
            this,
            { data in Unmanaged<DBusEventLoop>.fromOpaque(data!).release() })
        scheduleDrain()
    }

    /// Dispatches every message libdbus has queued. Runs on the queue, outside any callback.
    func drain() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !finished else { return }
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    /// Closes the connection and drops this module's reference, after every block queued
    /// before it; blocks queued later find the loop finished and do nothing.
    func finish() {
        queue.async { [self] in
            guard !finished else { return }
            finished = true
            timeouts.stop()
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
        }
    }

    /// Asks for a drain soon; never dispatches from inside a libdbus callback.
    func scheduleDrain() {
        queue.async { [self] in drain() }
    }

    /// A watch's file descriptor is ready: libdbus reads or writes, then what arrived is
    /// dispatched.
    func handle(_ watch: OpaquePointer, _ flags: UInt32) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !finished else { return }
        dbus_watch_handle(watch, flags)
        // libdbus reads about 2 KiB per call. While a message is still incomplete and more of
        // it waits on the socket, read on here (up to 1 MiB) instead of going back through the
        // dispatch source for every 2 KiB: a 30 MB call took 250 ms that way, the bus 35.
        var rounds = 1
        while flags == DBUS_WATCH_READABLE.rawValue, rounds < 512, dbus_watch_get_enabled(watch) != 0,
              dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_COMPLETE,
              Self.hasInput(dbus_watch_get_unix_fd(watch)) {
            dbus_watch_handle(watch, flags)
            rounds += 1
        }
        drain()
    }

    /// Whether `fd` has bytes to read now.
    private static func hasInput(_ fd: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 1 && descriptor.revents & Int16(POLLIN) != 0
    }

    /// A timeout is due (a call waited too long for its reply).
    func handle(_ timeout: OpaquePointer) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !finished else { return }
        dbus_timeout_handle(timeout)
    }

    var isFinished: Bool { finished }

    private func add(watch: OpaquePointer) -> dbus_bool_t {
        let source = WatchSource(watch: watch, loop: self)
        dbus_watch_set_data(watch, Unmanaged.passRetained(source).toOpaque()) { data in
            Unmanaged<WatchSource>.fromOpaque(data!).release()
        }
        source.update()
        return 1
    }

    private static func from(_ data: UnsafeMutableRawPointer?) -> DBusEventLoop {
        Unmanaged<DBusEventLoop>.fromOpaque(data!).takeUnretainedValue()
    }
}
