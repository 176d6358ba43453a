internal import CDBus
import Dispatch

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

    fileprivate func handle(_ watch: OpaquePointer, _ flags: UInt32) {
        guard !finished else { return }
        executor.runHoldingJobs {
            dbus_watch_handle(watch, flags)
            drain()
        }
    }

    fileprivate func handle(_ timeout: OpaquePointer) {
        guard !finished else { return }
        dbus_timeout_handle(timeout)
    }

    fileprivate var isFinished: Bool { finished }

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

/// A `DispatchSource` that starts suspended and must be resumed before it is released.
private final class SuspendableSource {
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
private final class WatchSource {
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

/// Every libdbus timeout of a connection on one DispatchSource timer, armed for the earliest
/// deadline. A call's timeout comes and goes with each call; giving each its own timer would
/// cost a trip to libdispatch's manager thread per call. The timer is moved only when a
/// deadline comes earlier than the armed one, and is left armed when a timeout goes: it then
/// fires once for nothing and stays idle.
final class TimeoutScheduler {
    private unowned let loop: DBusEventLoop
    private let timer: any DispatchSourceTimer
    private var deadlines: [OpaquePointer: DispatchTime] = [:]
    private var armed: DispatchTime?
    private var stopped = false

    init(loop: DBusEventLoop) {
        self.loop = loop
        timer = DispatchSource.makeTimerSource(queue: loop.queue)
        timer.setEventHandler { [unowned self] in fire() }
        timer.schedule(deadline: .distantFuture)
        timer.resume()
    }

    func add(_ timeout: OpaquePointer) -> dbus_bool_t {
        update(timeout)
        return 1
    }

    func remove(_ timeout: OpaquePointer) {
        deadlines[timeout] = nil
    }

    /// (Re)starts a timeout's interval when it is enabled; forgets it when it is not.
    func update(_ timeout: OpaquePointer) {
        guard dbus_timeout_get_enabled(timeout) != 0 else {
            deadlines[timeout] = nil
            return
        }
        let deadline = DispatchTime.now() + .milliseconds(Int(dbus_timeout_get_interval(timeout)))
        deadlines[timeout] = deadline
        arm(deadline)
    }

    func stop() {
        stopped = true
        deadlines = [:]
        timer.cancel()
    }

    private func arm(_ deadline: DispatchTime) {
        guard !stopped, armed.map({ deadline < $0 }) ?? true else { return }
        armed = deadline
        timer.schedule(deadline: deadline)
    }

    private func fire() {
        armed = nil
        let now = DispatchTime.now()
        for (timeout, deadline) in deadlines where deadline <= now {
            // Handling one timeout may remove others; libdbus re-adds or toggles what repeats.
            guard deadlines[timeout] != nil, !loop.isFinished else { continue }
            deadlines[timeout] = now + .milliseconds(Int(dbus_timeout_get_interval(timeout)))
            loop.handle(timeout)
        }
        loop.drain()
        if let next = deadlines.values.min() { arm(next) }
    }
}

/// Runs an actor's jobs on a `DispatchQueue`, so the actor and the libdbus loop share one
/// serial executor (Linux's Dispatch has no `DispatchSerialQueue` executor of its own).
final class DBusQueueExecutor: SerialExecutor, @unchecked Sendable {
    let queue: DispatchQueue
    /// The task executor a call prefers while it waits for its reply.
    private(set) var replies: DBusReplyExecutor!
    /// Jobs that became runnable while an event was handled on the queue; `nil` at any other
    /// time. Touched on the queue only.
    private var held: [Job]?
    /// How many jobs ran inside an event handler instead of later on the queue (for tests).
    private(set) var jobsRunInHandlers = 0

    private static let key = DispatchSpecificKey<ObjectIdentifier>()
    /// How many jobs one event handler runs before it leaves the rest to the queue.
    static let handlerJobBudget = 64

    init(queue: DispatchQueue) {
        self.queue = queue
        queue.setSpecific(key: Self.key, value: ObjectIdentifier(self))
        replies = DBusReplyExecutor(serial: self)
    }

    /// Whether the caller runs on this executor's queue.
    var isCurrent: Bool {
        DispatchQueue.getSpecific(key: Self.key) == ObjectIdentifier(self)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        submit(Job(job: UnownedJob(job), forReply: false))
    }

    fileprivate func submit(_ job: Job) {
        if isCurrent, held != nil {
            held!.append(job)
        } else {
            queue.async { self.run(job) }
        }
    }

    /// Runs an event handler, then, before returning, the jobs it made runnable: typically the
    /// task whose reply it dispatched. They would run next on the queue anyway; running them
    /// here lets that task send its next call before libdispatch re-arms the event source
    /// (which wakes its manager thread). Past ``handlerJobBudget`` jobs, the rest go to the
    /// queue, so a chain of jobs cannot hold the handler.
    func runHoldingJobs(_ handler: () -> Void) {
        held = []
        handler()
        var next = 0
        // Indexes into `held` rather than binding it: a job run here may append to it, and a
        // second reference would make each append copy the array.
        while next < Self.handlerJobBudget, let count = held?.count, next < count {
            let job = held![next]
            next += 1
            jobsRunInHandlers += 1
            run(job)
        }
        let rest = held?.dropFirst(next) ?? []
        held = nil
        for job in rest { queue.async { self.run(job) } }
    }

    private func run(_ job: Job) {
        if job.forReply {
            job.job.runSynchronously(on: replies.asUnownedTaskExecutor())
        } else {
            job.job.runSynchronously(on: asUnownedSerialExecutor())
        }
    }

    func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }

    fileprivate struct Job {
        let job: UnownedJob
        /// Enqueued on ``DBusReplyExecutor``, rather than on the actor.
        let forReply: Bool
    }
}

/// The task executor a call prefers while it waits for its reply (see `DBusConnection.call`):
/// its jobs run on the connection's queue.
///
/// A continuation resumes its task on the global pool, from where the task hops back to the
/// connection: two thread wake-ups per call, which were most of what a call cost over the
/// same loop in C. With this preference the reply resumes the task on the connection's queue.
final class DBusReplyExecutor: TaskExecutor, @unchecked Sendable {
    private unowned let serial: DBusQueueExecutor

    init(serial: DBusQueueExecutor) {
        self.serial = serial
    }

    func enqueue(_ job: consuming ExecutorJob) {
        serial.submit(DBusQueueExecutor.Job(job: UnownedJob(job), forReply: true))
    }
}
