internal import CEvents
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension EventLoop {
    /// Something to run on the loop.
    enum Work {
        case job(UnownedJob)
        case work(@Sendable () -> Void)
    }

    /// The descriptors, the queue and the loop-only tables. The thread of a loop made by
    /// ``onNewThread(name:)`` keeps this, not the ``EventLoop``, so that releasing the loop
    /// stops it.
    final class Core: @unchecked Sendable {
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
        unowned(unsafe) var owner: EventLoop?

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
}
