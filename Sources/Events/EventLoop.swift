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
    fileprivate func runJob(_ job: UnownedJob) {
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
        fileprivate let fd: Int32
        fileprivate let id: UInt64
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
        fileprivate let id: UInt64
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

    // MARK: Threads

    /// Runs `work`, which blocks, on a new thread of its own (a child process's wait, say), and
    /// returns its result to the caller's executor. The thread ends with the work; Swift's pool
    /// is not used.
    public static func detached<T: Sendable>(
        name: String, _ work: @escaping @Sendable () -> T
    ) async -> T {
        await withCheckedContinuation { continuation in
            if !spawnThread(name: name, { continuation.resume(returning: work()) }) {
                continuation.resume(returning: work())
            }
        }
    }
}

// MARK: - The loop's state

extension EventLoop {
    /// Something to run on the loop.
    fileprivate enum Work {
        case job(UnownedJob)
        case work(@Sendable () -> Void)
    }

    /// The descriptors, the queue and the loop-only tables. The thread of a loop made by
    /// ``onNewThread(name:)`` keeps this, not the ``EventLoop``, so that releasing the loop
    /// stops it.
    fileprivate final class Core: @unchecked Sendable {
        private let epoll: Int32
        private let wake: Int32
        private let timerFD: Int32
        private let queue = Mutex<[Work]>([])
        private let stopped = Atomic<Bool>(false)
        /// The loop's thread once it runs (pthread_t), else 0.
        private let thread = Atomic<UInt>(0)
        /// Set while the loop's thread sleeps in epoll_wait, or is about to: posts from other
        /// threads then write the eventfd.
        private let sleeping = Atomic<Bool>(false)
        /// The loop that runs jobs, for their executors; unowned: the loop owns this.
        fileprivate unowned(unsafe) var owner: EventLoop?

        // Touched on the loop's thread only.
        private var watches: [Int32: [UInt64: (interest: Interest, handler: (Readiness) -> Void)]] = [:]
        private var registered: [Int32: UInt32] = [:]
        private var timers: [UInt64: (deadline: ContinuousClock.Instant, work: () -> Void)] = [:]
        private var armed: ContinuousClock.Instant?
        private var nextID: UInt64 = 2

        private static let wakeToken: UInt64 = 0
        private static let timerToken: UInt64 = 1

        init() throws(EventLoopError) {
            epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
            wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
            timerFD = timerfd_create(CLOCK_BOOTTIME, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
            guard epoll >= 0, wake >= 0, timerFD >= 0,
                  bleadvd_epoll_ctl(epoll, EPOLL_CTL_ADD, wake, UInt32(EPOLLIN.rawValue), Self.wakeToken) == 0,
                  bleadvd_epoll_ctl(epoll, EPOLL_CTL_ADD, timerFD, UInt32(EPOLLIN.rawValue), Self.timerToken) == 0
            else {
                let reason = String(cString: strerror(errno))
                for fd in [epoll, wake, timerFD] where fd >= 0 { close(fd) }
                throw EventLoopError("cannot set up an event loop: \(reason)")
            }
        }

        deinit {
            close(epoll)
            close(wake)
            close(timerFD)
        }

        var isCurrent: Bool {
            let running = thread.load(ordering: .acquiring)
            return running != 0 && pthread_equal(pthread_self(), running) != 0
        }

        func spawn(name: String) throws(EventLoopError) {
            guard EventLoop.spawnThread(name: name, { self.run() }) else {
                throw EventLoopError("cannot start the event loop's thread")
            }
        }

        func stop() {
            stopped.store(true, ordering: .releasing)
            signalWake()
        }

        func post(_ work: Work) {
            let wasEmpty = queue.withLock { queue in
                queue.append(work)
                return queue.count == 1
            }
            // The loop's own thread looks at the queue before it sleeps again.
            if wasEmpty, !isCurrent, sleeping.load(ordering: .acquiring) { signalWake() }
        }

        private func signalWake() {
            var one: UInt64 = 1
            _ = write(wake, &one, 8)
        }

        func run() {
            thread.store(pthread_self(), ordering: .releasing)
            defer { thread.store(0, ordering: .releasing) }
            var data = [UInt64](repeating: 0, count: 32)
            var events = [UInt32](repeating: 0, count: 32)
            while !stopped.load(ordering: .acquiring) {
                runQueued()
                sleeping.store(true, ordering: .sequentiallyConsistent)
                // A post that came before `sleeping` was set did not wake us: look again.
                let pending = queue.withLock { !$0.isEmpty }
                let timeout: Int32 = pending || stopped.load(ordering: .acquiring) ? 0 : -1
                let count = bleadvd_epoll_wait(epoll, &data, &events, 32, timeout)
                sleeping.store(false, ordering: .sequentiallyConsistent)
                guard count > 0 else {
                    precondition(count == 0 || errno == EINTR, "epoll_wait: \(String(cString: strerror(errno)))")
                    continue
                }
                for index in 0..<Int(count) {
                    switch data[index] {
                    case Self.wakeToken:
                        var value: UInt64 = 0
                        _ = read(wake, &value, 8)
                    case Self.timerToken:
                        fireTimers()
                    default:
                        dispatch(data[index], Readiness(events: events[index]))
                    }
                }
            }
        }

        /// Runs what was queued when it started; what those post runs at the next turn, after
        /// the descriptors had their say.
        private func runQueued() {
            let batch = queue.withLock { queue in
                defer { queue.removeAll(keepingCapacity: true) }
                return queue
            }
            for work in batch {
                switch work {
                case .job(let job):
                    // Nothing can post a job to a loop that is gone; a stopped one drops them.
                    guard let owner else { return }
                    owner.runJob(job)
                case .work(let work): work()
                }
            }
        }

        // MARK: Watches

        func addWatch(_ fd: Int32, _ interest: Interest, _ handler: @escaping (Readiness) -> Void) throws(EventLoopError) -> Watch {
            let id = nextID
            nextID += 1
            watches[fd, default: [:]][id] = (interest, handler)
            do {
                try register(fd)
            } catch {
                watches[fd]?[id] = nil
                if watches[fd]?.isEmpty == true { watches[fd] = nil }
                throw error
            }
            return Watch(fd: fd, id: id)
        }

        func updateWatch(_ watch: Watch, _ interest: Interest) throws(EventLoopError) {
            guard watches[watch.fd]?[watch.id] != nil else { return }
            watches[watch.fd]![watch.id]!.interest = interest
            try register(watch.fd)
        }

        func removeWatch(_ watch: Watch) {
            guard watches[watch.fd]?.removeValue(forKey: watch.id) != nil else { return }
            if watches[watch.fd]!.isEmpty { watches[watch.fd] = nil }
            try? register(watch.fd)
        }

        /// Tells epoll what the descriptor's watches wait for together. With nothing to wait
        /// for it leaves epoll, which would otherwise report a hang-up at every turn.
        private func register(_ fd: Int32) throws(EventLoopError) {
            let wanted = watches[fd]?.values.reduce(UInt32(0)) { $0 | $1.interest.events } ?? 0
            let current = registered[fd]
            guard wanted != current else { return }
            let token = UInt64(UInt32(bitPattern: fd)) + 2
            let result: Int32
            switch (current, wanted) {
            case (nil, 0): return
            case (nil, _): result = bleadvd_epoll_ctl(epoll, EPOLL_CTL_ADD, fd, wanted, token)
            case (_, 0): result = bleadvd_epoll_ctl(epoll, EPOLL_CTL_DEL, fd, 0, 0)
            default: result = bleadvd_epoll_ctl(epoll, EPOLL_CTL_MOD, fd, wanted, token)
            }
            guard result == 0 || wanted == 0 else {
                throw EventLoopError("epoll_ctl on descriptor \(fd): \(String(cString: strerror(errno)))")
            }
            registered[fd] = wanted == 0 ? nil : wanted
        }

        private func dispatch(_ token: UInt64, _ readiness: Readiness) {
            let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: token - 2))
            guard let entries = watches[fd] else { return }
            let always = UInt32(EPOLLHUP.rawValue | EPOLLERR.rawValue)
            for id in entries.keys.sorted() {
                // A handler may end or change the others.
                guard let entry = watches[fd]?[id], entry.interest.events != 0,
                      readiness.events & (entry.interest.events | always) != 0 else { continue }
                entry.handler(readiness)
            }
        }

        // MARK: Timers

        func addTimer(_ deadline: ContinuousClock.Instant, _ work: @escaping () -> Void) -> Timer {
            let id = nextID
            nextID += 1
            timers[id] = (deadline, work)
            rearm()
            return Timer(id: id)
        }

        func cancelTimer(_ timer: Timer) {
            guard timers.removeValue(forKey: timer.id) != nil else { return }
            rearm()
        }

        private func fireTimers() {
            var expirations: UInt64 = 0
            _ = read(timerFD, &expirations, 8)
            armed = nil
            let now = ContinuousClock.now
            let due = timers.filter { $0.value.deadline <= now }.sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
            for (id, _) in due {
                // An earlier timer's work may have cancelled this one.
                guard let timer = timers.removeValue(forKey: id) else { continue }
                timer.work()
            }
            rearm()
        }

        /// Arms the timerfd for the earliest deadline, or disarms it when there is none, so that
        /// an idle loop is never woken for a timer that no longer matters.
        private func rearm() {
            let earliest = timers.values.map(\.deadline).min()
            guard earliest != armed else { return }
            armed = earliest
            var setting = itimerspec()
            if let earliest {
                // At least 1 ns: an all-zero it_value disarms the timer.
                let (seconds, attoseconds) = max(ContinuousClock.now.duration(to: earliest), .nanoseconds(1)).components
                setting.it_value = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
            }
            timerfd_settime(timerFD, 0, &setting, nil)
        }
    }

    /// Starts a detached thread named `name` that runs `body`. Returns whether it started.
    @discardableResult
    fileprivate static func spawnThread(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        final class Start {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        let created = pthread_create(&thread, &attributes, { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            bleadvd_name_thread(start.name)
            start.body()
            return nil
        }, start)
        if created != 0 { Unmanaged<Start>.fromOpaque(start).release() }
        return created == 0
    }
}

/// What the kernel refused an event loop (an epoll, eventfd, timerfd or signalfd, a watch, the
/// thread), in words.
public struct EventLoopError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was refused, and the kernel's reason.
    public var message: String

    /// An error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
