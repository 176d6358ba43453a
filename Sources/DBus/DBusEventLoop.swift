internal import CDBus
internal import Events
#if canImport(Glibc)
import Glibc
#endif

/// Runs one libdbus connection on an `EventLoop`: libdbus's watches become the loop's
/// watches, its timeouts the loop's timers, and incoming messages are dispatched there.
///
/// Nothing polls: an idle connection has no timer armed and no thread awake. Every libdbus
/// connection function is called on the loop's thread only, so the watch and timeout
/// callbacks, which libdbus runs with the connection lock held, only touch the loop's tables.
final class DBusEventLoop: @unchecked Sendable {
    let eventLoop: EventLoop
    let connection: OpaquePointer
    /// Set once the connection is closed and released; nothing touches it afterwards.
    private var finished = false
    /// libdbus's timeouts (one per pending call, 25 s by default), each with a timer of the
    /// loop while it is enabled.
    private var timeouts: [OpaquePointer: EventLoop.Timer?] = [:]

    init(connection: OpaquePointer, eventLoop: EventLoop) {
        self.connection = connection
        self.eventLoop = eventLoop
    }

    /// Hooks the loop into libdbus. Call once, on the loop. The connection keeps this alive
    /// until it is finalized.
    func install() {
        eventLoop.checkIsolated()
        let this = Unmanaged.passRetained(self).toOpaque()
        dbus_connection_set_watch_functions(
            connection,
            { watch, data in DBusEventLoop.from(data).add(watch: watch!) },
            { watch, data in DBusEventLoop.from(data).remove(watch: watch!) },
            { watch, data in DBusEventLoop.from(data).update(watch: watch!) },
            this, nil)
        dbus_connection_set_timeout_functions(
            connection,
            { timeout, data in DBusEventLoop.from(data).add(timeout: timeout!) },
            { timeout, data in DBusEventLoop.from(data).remove(timeout: timeout!) },
            { timeout, data in DBusEventLoop.from(data).update(timeout: timeout!) },
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

    /// Dispatches every message libdbus has queued. Runs on the loop, outside any callback.
    func drain() {
        eventLoop.checkIsolated()
        guard !finished else { return }
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    /// Closes the connection and drops this module's reference, after everything posted to the
    /// loop before it; work posted later finds the connection finished and does nothing.
    func finish() {
        eventLoop.post { [self] in
            guard !finished else { return }
            finished = true
            for case let timer? in timeouts.values { eventLoop.cancel(timer) }
            timeouts = [:]
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
        }
    }

    /// Asks for a drain soon; never dispatches from inside a libdbus callback.
    func scheduleDrain() {
        eventLoop.post { [self] in drain() }
    }

    // MARK: Watches

    /// A watch's file descriptor is ready: libdbus reads or writes, then what arrived is
    /// dispatched.
    private func handle(_ watch: OpaquePointer, _ readiness: EventLoop.Readiness) {
        guard !finished else { return }
        var flags: UInt32 = 0
        if readiness.readable { flags |= DBUS_WATCH_READABLE.rawValue }
        if readiness.writable { flags |= DBUS_WATCH_WRITABLE.rawValue }
        if readiness.hungUp { flags |= DBUS_WATCH_HANGUP.rawValue }
        if readiness.failed { flags |= DBUS_WATCH_ERROR.rawValue }
        // Both of a descriptor's watches hear its readiness; each handles its own direction.
        flags &= dbus_watch_get_flags(watch) | DBUS_WATCH_HANGUP.rawValue | DBUS_WATCH_ERROR.rawValue
        dbus_watch_handle(watch, flags)
        // libdbus reads about 2 KiB per call. While a message is still incomplete and more of
        // it waits on the socket, read on here (up to 1 MiB) instead of going back through
        // epoll for every 2 KiB: a 30 MB call took 250 ms that way, the bus 35.
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

    /// What the loop is to wait for on a libdbus watch: nothing while libdbus disables it.
    private static func interest(of watch: OpaquePointer) -> EventLoop.Interest {
        guard dbus_watch_get_enabled(watch) != 0 else { return .nothing }
        let flags = dbus_watch_get_flags(watch)
        return EventLoop.Interest(
            readable: flags & DBUS_WATCH_READABLE.rawValue != 0, writable: flags & DBUS_WATCH_WRITABLE.rawValue != 0)
    }

    private func add(watch: OpaquePointer) -> dbus_bool_t {
        let registration: EventLoop.Watch
        do {
            registration = try eventLoop.watch(dbus_watch_get_unix_fd(watch), for: Self.interest(of: watch)) { [unowned self] readiness in
                handle(watch, readiness)
            }
        } catch {
            return 0
        }
        let box = Unmanaged.passRetained(WatchBox(registration)).toOpaque()
        dbus_watch_set_data(watch, box) { data in Unmanaged<WatchBox>.fromOpaque(data!).release() }
        return 1
    }

    private func remove(watch: OpaquePointer) {
        guard let registration = WatchBox.from(watch) else { return }
        eventLoop.remove(registration)
    }

    private func update(watch: OpaquePointer) {
        guard let registration = WatchBox.from(watch) else { return }
        try? eventLoop.update(registration, to: Self.interest(of: watch))
    }

    // MARK: Timeouts

    private func add(timeout: OpaquePointer) -> dbus_bool_t {
        timeouts[timeout] = .some(nil)
        update(timeout: timeout)
        return 1
    }

    private func remove(timeout: OpaquePointer) {
        if case let timer?? = timeouts.removeValue(forKey: timeout) { eventLoop.cancel(timer) }
    }

    /// (Re)starts a timeout's interval when it is enabled; stops it when it is not.
    private func update(timeout: OpaquePointer) {
        guard let timer = timeouts[timeout] else { return }
        if let timer { eventLoop.cancel(timer) }
        timeouts[timeout] = .some(nil)
        guard dbus_timeout_get_enabled(timeout) != 0 else { return }
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(dbus_timeout_get_interval(timeout)))
        timeouts[timeout] = eventLoop.schedule(at: deadline) { [unowned self] in
            timeouts[timeout] = .some(nil)
            guard !finished else { return }
            dbus_timeout_handle(timeout)
            // libdbus's timeouts repeat until removed or disabled (a pending call's is removed
            // as it handles it).
            if case .some(nil) = timeouts[timeout] { update(timeout: timeout) }
            drain()
        }
    }

    private static func from(_ data: UnsafeMutableRawPointer?) -> DBusEventLoop {
        Unmanaged<DBusEventLoop>.fromOpaque(data!).takeUnretainedValue()
    }
}

/// The loop's watch behind a libdbus watch, kept in the watch's data.
private final class WatchBox {
    let registration: EventLoop.Watch

    init(_ registration: EventLoop.Watch) {
        self.registration = registration
    }

    static func from(_ watch: OpaquePointer) -> EventLoop.Watch? {
        dbus_watch_get_data(watch).map { Unmanaged<WatchBox>.fromOpaque($0).takeUnretainedValue().registration }
    }
}
