#if canImport(Glibc)
import Glibc
#endif
internal import Synchronization

/// Ending a program with everything it started, whatever it did (a session of its own, a double
/// fork), and reaping it without ever blocking the thread that ends it.
extension Spawn {
    /// The children this process started (``start(_:_:stdio:environment:group:expendable:)``)
    /// and has not reaped. Locked while a child starts, so that no look for orphans sees a child
    /// before it is in.
    static let started = Mutex<Set<Int32>>([])
    /// Whether this process adopts its descendants' orphans (``adoptOrphans()``).
    static let adopting = Mutex(false)
    /// The children a task of ``reapLater(_:polling:on:executor:)`` reaps: one task for each.
    static let reaping = Mutex<Set<Int32>>([])

    /// Says that this process has become its descendants' subreaper (prctl
    /// PR_SET_CHILD_SUBREAPER; bleadvd makes the call at start): what a program it started
    /// leaves behind when a process between them exits (a double fork, a `setsid` after a fork)
    /// becomes its child, not init's. From then on ``end(_:polling:on:executor:)`` ends, with any
    /// program, every child of this process that it did not start: the process must start its
    /// children through `Spawn` alone.
    public static func adoptOrphans() {
        adopting.withLock { $0 = true }
    }

    /// Kills `pid` and every process it started, and reaps it: its status when it can be reaped
    /// at once, else nil, and it is reaped later, looked at every `poll` (up to every second) on
    /// `clock` by a task of its own that prefers `executor` (nil: Swift's global pool; an
    /// unstructured task does not inherit its creator's preference, so it is passed). Never
    /// blocks: a process in uninterruptible sleep dies when it wakes. Its descendants are
    /// stopped (SIGSTOP) while they are looked for, so that none forks meanwhile, then all
    /// killed: those in a session or a group of their own too. With ``adoptOrphans()``, so are
    /// the children of this process that it did not start, the orphans of some program.
    @discardableResult
    public static func end<C: Clock>(
        _ pid: Int32, polling poll: Duration, on clock: C, executor: (any TaskExecutor)?
    ) -> Int32? where C.Duration == Duration {
        let descendants = stoppedDescendants(of: pid)
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        for process in descendants { kill(process, SIGKILL) }
        if let status = reaped(pid) {
            endOrphans(polling: poll, on: clock, executor: executor)
            return status
        }
        reapLater(pid, polling: poll, on: clock, executor: executor)
        return nil
    }

    /// Ends what a program that exited left running: its process group, and with
    /// ``adoptOrphans()`` this process's children that it did not start (what the program
    /// left became this process's children when it exited).
    public static func endLeftovers<C: Clock>(
        of pid: Int32, polling poll: Duration, on clock: C, executor: (any TaskExecutor)?
    ) where C.Duration == Duration {
        kill(-pid, SIGKILL)
        endOrphans(polling: poll, on: clock, executor: executor)
    }

    /// With ``adoptOrphans()``, kills this process's children that it did not start, with all
    /// they started, and reaps them as ``end(_:polling:on:executor:)`` does.
    static func endOrphans<C: Clock>(polling poll: Duration, on clock: C, executor: (any TaskExecutor)?) where C.Duration == Duration {
        guard adopting.withLock({ $0 }) else { return }
        // Found and killed with ``started`` locked, so that a child starting meanwhile (the
        // config check's, on a thread of its own) is not taken for an orphan.
        let killed = started.withLock { started in
            let found = orphans(children: ownChildren(), started: started)
            for orphan in found {
                for process in stoppedDescendants(of: orphan) { kill(process, SIGKILL) }
                kill(orphan, SIGKILL)
            }
            return found
        }
        for orphan in killed where reaped(orphan) == nil { reapLater(orphan, polling: poll, on: clock, executor: executor) }
    }

    /// This process's children that it did not start.
    package static func orphans(children: [Int32], started: Set<Int32>) -> [Int32] {
        children.filter { !started.contains($0) }.sorted()
    }

    /// This process's children, as the kernel lists them for each of its threads
    /// (/proc/self/task/TID/children): its own, which /proc shows whatever it hides of other
    /// processes (systemd's ProtectProc=invisible hides a process that made itself
    /// non-dumpable, even from its own user's).
    package static func ownChildren() -> [Int32] {
        var children: [Int32] = []
        for name in directoryNames("/proc/self/task") where Int32(name) != nil {
            let fd = open("/proc/self/task/\(name)/children", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            var text: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(fd, &buffer, buffer.count)
                guard count > 0 else { break }
                text += buffer[..<count]
            }
            children += text.split(separator: UInt8(ascii: " ")).compactMap { Int32(String(decoding: $0, as: UTF8.self).trimmingPrefix(" ")) }
        }
        return children
    }

    /// With ``adoptOrphans()``, reaps the children of this process that it did not start and
    /// that have exited, without waiting and without killing any: what a program left running
    /// when it exited (an identify command's `(sleep 1; led off) &`) became this process's
    /// child, and once it ends it would stay a zombie, counted against the unit's TasksMax.
    /// Called each time a child is reaped.
    static func reapOrphans() {
        guard adopting.withLock({ $0 }) else { return }
        started.withLock { started in
            for orphan in orphans(children: ownChildren(), started: started) {
                var status: Int32 = 0
                _ = waitpid(orphan, &status, WNOHANG)
            }
        }
    }

    /// Reaps `pid` once it can be, looking every `poll`, then less and less often (down to once
    /// a second), in a task that prefers `executor` and that nothing cancels; none when one
    /// reaps it already. Once it is
    /// reaped, ends adopted orphans (what it left became this process's children as it died).
    static func reapLater<C: Clock>(_ pid: Int32, polling poll: Duration, on clock: C, executor: (any TaskExecutor)?) where C.Duration == Duration {
        guard reaping.withLock({ $0.insert(pid).inserted }) else { return }
        Task(executorPreference: executor) {
            defer { reaping.withLock { _ = $0.remove(pid) } }
            var wait = poll
            while true {
                var status: Int32 = 0
                let result = waitpid(pid, &status, WNOHANG)
                // Reaped, or no longer this process's child to reap (someone reaped it).
                if result == pid || (result == -1 && errno == ECHILD) { break }
                guard (try? await clock.sleep(for: wait)) != nil else { return }
                wait = min(wait * 2, .seconds(1))
            }
            started.withLock { _ = $0.remove(pid) }
            endOrphans(polling: poll, on: clock, executor: executor)
        }
    }

    /// `pid`'s descendants, each stopped (SIGSTOP) as it is found, and `pid` first: looked for
    /// again until no new one appears (a process stopped cannot fork; one that forked before
    /// it stopped shows its child at the next look), at most 64 times.
    static func stoppedDescendants(of pid: Int32) -> [Int32] {
        kill(pid, SIGSTOP)
        var found: [Int32] = []
        var seen: Set<Int32> = [pid]
        for _ in 0..<64 {
            let new = descendants(of: pid, parents: parents()).filter { !seen.contains($0) }
            guard !new.isEmpty else { break }
            for process in new { kill(process, SIGSTOP) }
            seen.formUnion(new)
            found += new
        }
        return found
    }

    /// The descendants of `pid` by `parents` (each process's parent), nearest first.
    package static func descendants(of pid: Int32, parents: [Int32: Int32]) -> [Int32] {
        var children: [Int32: [Int32]] = [:]
        for (child, parent) in parents { children[parent, default: []].append(child) }
        var found: [Int32] = []
        var next = [pid]
        while !next.isEmpty {
            let level = next.flatMap { (children[$0] ?? []).sorted() }.filter { $0 != pid && !found.contains($0) }
            found += level
            next = level
        }
        return found
    }

    /// Every process's parent, as /proc shows them (the processes this process may see).
    static func parents() -> [Int32: Int32] {
        var parents: [Int32: Int32] = [:]
        for name in directoryNames("/proc") {
            guard let pid = Int32(name), let parent = parent(of: pid) else { continue }
            parents[pid] = parent
        }
        return parents
    }

    /// `pid`'s parent, from /proc/`pid`/stat (the field after the state, after the name's
    /// last parenthesis); nil when it is gone.
    static func parent(of pid: Int32) -> Int32? {
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0, let close = buffer[..<count].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = buffer[(close + 1)..<count].split(separator: UInt8(ascii: " "))
        return fields.count > 1 ? Int32(String(decoding: fields[1], as: UTF8.self)) : nil
    }

    /// Runs `body` (which starts a child, giving posix_spawn's result) with this process's OOM
    /// score adjustment at 1000, the most, then puts it back: the child inherits 1000, and so
    /// does everything it starts, so that when memory runs out in bleadvd's cgroup
    /// (`MemoryMax=`) the kernel kills a program rather than bleadvd. Raising the score needs no
    /// privilege, and putting it back where it was is allowed (a process may not go below the
    /// floor a privileged writer set, and it was at or above it); for those microseconds bleadvd
    /// would be the kernel's choice itself. When /proc cannot be written, the child starts with
    /// bleadvd's score.
    /// Called with ``started`` locked, so one child at a time.
    static func expendable(_ body: () -> Int32) -> Int32 {
        let fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return body() }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = pread(fd, &buffer, buffer.count, 0)
        let before = count > 0 ? Array(buffer[..<count]) : Array("0\n".utf8)
        let raised = Array("1000\n".utf8)
        _ = pwrite(fd, raised, raised.count, 0)
        defer { _ = pwrite(fd, before, before.count, 0) }
        return body()
    }
}
