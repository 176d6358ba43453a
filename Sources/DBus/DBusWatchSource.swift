internal import CDBus
import Dispatch

/// A `DispatchSource` that starts suspended and must be resumed before it is released.
final class SuspendableSource {
    let source: any DispatchSourceProtocol
    private(set) var running = false
    private var cancelled = false

    init(_ source: any DispatchSourceProtocol) {
        self.source = source
    }

    deinit {
        cancel()
    }

    func set(running wanted: Bool) {
        guard !cancelled, wanted != running else { return }
        running = wanted
        if wanted { source.resume() } else { source.suspend() }
    }

    func cancel() {
        guard !cancelled else { return }
        source.cancel()
        set(running: true)
        cancelled = true
    }
}

/// The DispatchSources behind one libdbus watch: one for reading, one for writing.
final class WatchSource {
    private let watch: OpaquePointer
    private var readable: SuspendableSource?
    private var writable: SuspendableSource?

    init(watch: OpaquePointer, loop: DBusEventLoop) {
        self.watch = watch
        let fd = dbus_watch_get_unix_fd(watch)
        let flags = dbus_watch_get_flags(watch)
        if flags & DBUS_WATCH_READABLE.rawValue != 0 {
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: loop.queue)
            source.setEventHandler { loop.handle(watch, DBUS_WATCH_READABLE.rawValue) }
            readable = SuspendableSource(source)
        }
        if flags & DBUS_WATCH_WRITABLE.rawValue != 0 {
            let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: loop.queue)
            source.setEventHandler { loop.handle(watch, DBUS_WATCH_WRITABLE.rawValue) }
            writable = SuspendableSource(source)
        }
    }

    func update() {
        let enabled = dbus_watch_get_enabled(watch) != 0
        readable?.set(running: enabled)
        writable?.set(running: enabled)
    }

    func cancel() {
        readable?.cancel()
        writable?.cancel()
    }

    static func from(_ watch: OpaquePointer) -> WatchSource? {
        dbus_watch_get_data(watch).map { Unmanaged<WatchSource>.fromOpaque($0).takeUnretainedValue() }
    }
}
