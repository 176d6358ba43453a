internal import CEvents
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One thread's loop around `epoll_wait`: the serial executor of actors, the task executor of
/// tasks, file-descriptor watches, timers and signals, all on that thread.
///
/// bleadvd runs everything on one of these, on its main thread, so that it never starts a
/// thread of Swift's global pool: libdispatch's pool, once it has had a thread, wakes the
/// process every second to check on it (docs/BENCHMARKS.md). While nothing happens the thread
/// sleeps in `epoll_wait` with no timeout; a timer is one `timerfd` armed for the earliest
/// deadline, and disarmed when no timer is left.
///
/// Jobs and work posted from other threads wake the loop through an `eventfd`; what the loop's
/// own thread posts runs before it sleeps again, with no system call. Watches, timers and
/// signals are set up and changed on the loop's thread only (``isCurrent``); ``execute(_:)``
/// gets there from anywhere.
public final class EventLoop: SerialExecutor, TaskExecutor, @unchecked Sendable {
    private let core: Core
    private let ownsThread: Bool

    /// A loop to be run on the calling thread by ``run()``.
    /// - Throws: ``EventLoopError`` when the kernel refuses an epoll, eventfd or timerfd
    ///   (out of file descriptors).
    public init() throws(EventLoopError) {
        core = try Core()
        ownsThread = false
        core.owner = self
    }

    private init(core: Core) {
        self.core = core
        ownsThread = true
        core.owner = self
    }

    /// A loop on a thread of its own, named `name` (at most 15 bytes are kept). The thread ends
    /// when the loop is released: whatever can still post to it keeps it.
    /// - Throws: ``EventLoopError`` when the descriptors or the thread cannot be made.
    public static func onNewThread(name: String) throws(EventLoopError) -> EventLoop {
        let core = try Core()
        try core.spawn(name: name)
        return EventLoop(core: core)
    }

    deinit {
        core.owner = nil
        if ownsThread { core.stop() }
    }

    /// Runs the loop on the calling thread until ``stop()``.
    public func run() {
        core.run()
    }

    /// Makes ``run()`` return after the work it is doing; callable from any thread. Jobs still
    /// queued then are never run.
    public func stop() {
        core.stop()
    }

    /// Whether the caller runs on the loop's thread.
    public var isCurrent: Bool { core.isCurrent }

    // MARK: Executors

    /// Queues a job (an actor's or a task's) to run on the loop's thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        core.post(.job(UnownedJob(job)))
    }

    /// Stops the process unless called on the loop's thread.
    public func checkIsolated() {
        precondition(isCurrent, "not on the event loop's thread")
    }

    /// Runs `job`, isolated to this executor and preferring it for the job's task.
    func runJob(_ job: UnownedJob) {
        job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
    }

    // MARK: Work

    /// Runs `work` on the loop: at once when called there, else as soon as the loop is free.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        if isCurrent { work() } else { core.post(.work(work)) }
    }

    /// Runs `work` on the loop after what it is doing now, even when called there (for work
    /// that must not run inside a caller's callback).
    public func post(_ work: @escaping @Sendable () -> Void) {
        core.post(.work(work))
    }

    // MARK: Watches

    /// What a watch waits for.
    public struct Interest: Sendable, Hashable {
        /// Bytes to read (or the peer hung up).
        public var readable: Bool
        /// Room to write.
        public var writable: Bool

        /// An interest in either, both or neither (a paused watch).
        public init(readable: Bool, writable: Bool) {
            self.readable = readable
            self.writable = writable
        }

        /// Bytes to read (or the peer hung up).
        public static let readable = Interest(readable: true, writable: false)
        /// Room to write.
        public static let writable = Interest(readable: false, writable: true)
        /// Nothing: the watch is paused.
        public static let nothing = Interest(readable: false, writable: false)

        /// The `epoll` events.
        var events: UInt32 {
            (readable ? UInt32(EPOLLIN.rawValue) : 0) | (writable ? UInt32(EPOLLOUT.rawValue) : 0)
        }
    }

    /// What a watch's handler is told: the interests that are ready, and whether the descriptor
    /// hung up or failed (reported to every enabled watch on it, whatever it waits for).
    public struct Readiness: Sendable, Hashable {
        /// The raw `epoll` events.
        public let events: UInt32
        /// Whether there is something to read.
        public var readable: Bool { events & UInt32(EPOLLIN.rawValue) != 0 }
        /// Whether there is room to write.
        public var writable: Bool { events & UInt32(EPOLLOUT.rawValue) != 0 }
        /// Whether the peer hung up.
        public var hungUp: Bool { events & UInt32(EPOLLHUP.rawValue) != 0 }
        /// Whether the descriptor is in error.
        public var failed: Bool { events & UInt32(EPOLLERR.rawValue) != 0 }
    }

    /// A watch on a file descriptor, from ``watch(_:for:handler:)``.
    public struct Watch: Sendable, Hashable {
        let fd: Int32
        let id: UInt64
    }

    /// Calls `handler` on the loop whenever `fd` is ready for `interest` (level-triggered: again
    /// at every turn of the loop while it stays ready). Several watches may share a descriptor.
    /// Call on the loop's thread.
    /// - Throws: ``EventLoopError`` when epoll refuses the descriptor.
    public func watch(
        _ fd: Int32, for interest: Interest, handler: @escaping (Readiness) -> Void
    ) throws(EventLoopError) -> Watch {
        checkIsolated()
        return try core.addWatch(fd, interest, handler)
    }

    /// Changes what a watch waits for; ``Interest/nothing`` pauses it.
    /// - Throws: ``EventLoopError`` when epoll refuses the change.
    public func update(_ watch: Watch, to interest: Interest) throws(EventLoopError) {
        checkIsolated()
        try core.updateWatch(watch, interest)
    }

    /// Ends a watch. The descriptor stays open: it is its owner's to close, after this.
    public func remove(_ watch: Watch) {
        checkIsolated()
        core.removeWatch(watch)
    }

    // MARK: Timers

    /// A timer, from ``schedule(at:_:)``.
    public struct Timer: Sendable, Hashable {
        let id: UInt64
    }

    /// Calls `work` on the loop once `deadline` has passed on the continuous clock. Call on the
    /// loop's thread.
    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ work: @escaping () -> Void) -> Timer {
        checkIsolated()
        return core.addTimer(deadline, work)
    }

    /// Cancels a timer that has not fired; nothing happens for one that has.
    public func cancel(_ timer: Timer) {
        checkIsolated()
        core.cancelTimer(timer)
    }

    // MARK: Signals

    /// Delivers `signals` to `handler` on the loop (through a `signalfd`) instead of their
    /// default action, until the process ends. The signals are blocked in the calling thread,
    /// and in the threads it starts afterwards: call it on the loop's thread before any other
    /// thread exists.
    /// - Throws: ``EventLoopError`` when the signalfd cannot be made.
    public func handleSignals(_ signals: [Int32], handler: @escaping (Int32) -> Void) throws(EventLoopError) {
        checkIsolated()
        var set = sigset_t()
        sigemptyset(&set)
        for number in signals { sigaddset(&set, number) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let fd = signalfd(-1, &set, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
        guard fd >= 0 else { throw EventLoopError("signalfd: \(String(cString: strerror(errno)))") }
        _ = try watch(fd, for: .readable) { _ in
            var info = signalfd_siginfo()
            while read(fd, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
                handler(Int32(info.ssi_signo))
            }
        }
    }
}
