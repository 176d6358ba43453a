#if canImport(Glibc)
import Glibc
#endif
internal import Synchronization

/// Starts a program as a child with a clean slate: every signal unblocked and at its default,
/// no systemd notify socket, no Swift backtrace. The config check's child and the commands the
/// config names (Improv's identify) start this way.
public enum Spawn {
    /// Standard input, read to its end but at most `limit` bytes and one more: a caller tells
    /// input over its limit by the count, and holds no more than that however much comes.
    public static func standardInput(upTo limit: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: Swift.min(65_536, limit + 1))
        while bytes.count <= limit {
            let count = read(0, &buffer, Swift.min(buffer.count, limit + 1 - bytes.count))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[..<count]
        }
        return bytes
    }

    /// `posix_spawn` failed, or the socket pair for the child did (``startConnected``); `code`
    /// is its errno.
    public struct Failure: Error, Sendable {
        /// The errno.
        public let code: Int32
        /// Whether `socketpair` failed, before anything was started.
        public var socketPair = false
    }

    /// Starts `executable` as ``start(_:_:stdio:environment:group:expendable:)`` does, its standard input and
    /// output one end of a new socket pair; returns its pid and the other end, this process's
    /// (close-on-exec; the caller closes it). No descriptor is left open when it throws.
    public static func startConnected(
        _ executable: String, _ arguments: [String], environment: [String] = [], group: Bool = false, expendable: Bool = false
    ) throws(Failure) -> (pid: Int32, socket: Int32) {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw Failure(code: errno, socketPair: true)
        }
        let (parent, child) = (ends[0], ends[1])
        defer { close(child) }
        do {
            return (try start(executable, arguments, stdio: child, environment: environment, group: group, expendable: expendable), parent)
        } catch {
            close(parent)
            throw error
        }
    }

    /// Starts `executable` with `arguments` (the first being its name). `stdio` becomes its
    /// standard input and output (nil: `/dev/null`); its standard error is `/dev/null`.
    /// `environment` is added to this process's. With `group`, it leads a process group of its
    /// own. `expendable`: it (and all it starts) is the kernel's first choice when memory runs
    /// out, before this process (``expendable(_:)``).
    public static func start(
        _ executable: String, _ arguments: [String], stdio: Int32?, environment extra: [String] = [], group: Bool = false,
        expendable: Bool = false
    ) throws(Failure) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdio {
            posix_spawn_file_actions_adddup2(&actions, stdio, 0)
            posix_spawn_file_actions_adddup2(&actions, stdio, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // No backtrace or core for a crash that is expected and reported; no systemd notices.
        var environment: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if !text.hasPrefix("NOTIFY_SOCKET=") && !text.hasPrefix("SWIFT_BACKTRACE=") { environment.append(text) }
            entry += 1
        }
        environment += ["SWIFT_BACKTRACE=enable=no"] + extra
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }
        // A clean start: no blocked signals, every signal at its default (the parent's threads
        // may block some, and Dispatch ignores those it watches), so a crash is a crash.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | (group ? POSIX_SPAWN_SETPGROUP : 0)))
        var pid: pid_t = 0
        let code = started.withLock { started in
            let code = expendable
                ? Self.expendable { posix_spawn(&pid, executable, &actions, &attributes, argv, envp) }
                : posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            if code == 0 { started.insert(pid) }
            return code
        }
        guard code == 0 else { throw Failure(code: code) }
        return pid
    }

    /// Waits for `pid` to exit, looking every `poll` on `clock` once `each` ran (the caller's
    /// work with the child between looks: feeding it, reading it), for at most `limit`: its
    /// status, reaped. Nil when `limit` passed first or the waiting task was cancelled: it is
    /// killed then with everything it started, and reaped once it can be, never waited for, by
    /// a task that prefers `executor` (``end(_:polling:on:executor:)``).
    public static func exit<C: Clock>(
        of pid: Int32, within limit: Duration, polling poll: Duration, on clock: C, executor: (any TaskExecutor)?,
        each: () -> Void = {}
    ) async -> Int32? where C.Duration == Duration {
        var waited = Duration.zero
        while true {
            each()
            if let status = reaped(pid) { return status }
            guard waited < limit, (try? await clock.sleep(for: poll)) != nil else {
                end(pid, polling: poll, on: clock, executor: executor)
                return nil
            }
            waited += poll
        }
    }

    /// Whether `pid` has exited: reaps it (its status), or nil while it runs.
    public static func reaped(_ pid: Int32) -> Int32? {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        started.withLock { _ = $0.remove(pid) }
        reapOrphans()
        return status
    }

    /// Waits for `pid` to exit, blocking the calling thread: its status, reaped. For bleadvd's
    /// own children alone (the config check's): a program the config names may not be reapable
    /// for a long while, and is ended with ``end(_:polling:on:executor:)``.
    public static func status(waitingFor pid: Int32) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        started.withLock { _ = $0.remove(pid) }
        return status
    }

    /// Kills `pid`, and its process group when it leads one (``start(_:_:stdio:environment:group:expendable:)``),
    /// and reaps it, blocking the calling thread until it can: for bleadvd's own children alone,
    /// as ``status(waitingFor:)``.
    public static func stop(_ pid: Int32) {
        // The group first, so that nothing it started outlives it (ESRCH when it leads none).
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        _ = status(waitingFor: pid)
    }
}
