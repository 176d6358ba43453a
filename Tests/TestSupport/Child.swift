public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`, its standard output (and optionally error)
/// on pipes. Foundation's `Process.waitUntilExit()` waits on a run loop that a Swift
/// concurrency thread never serves, so the tests use this instead.
public final class Child: @unchecked Sendable {
    /// The process id.
    public let pid: pid_t
    /// Its standard output.
    public let stdout: FileHandle
    /// Its standard error, when captured.
    public let stderr: FileHandle?
    /// What it reads as standard input, when given one (`input: true`): a pipe that stays open,
    /// with nothing in it, until written or closed. Otherwise it reads this process's.
    public let stdin: FileHandle?
    private var status: Int32?

    /// Starts `executable` (a path) with `arguments`; `environment` adds to this process's;
    /// with `input`, its standard input is ``stdin``.
    public init(
        _ executable: String, _ arguments: [String], captureErrors: Bool = true, environment: [String: String] = [:], input: Bool = false
    ) throws {
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        var inPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0, !input || pipe(&inPipe) == 0 else { throw TestFailure("pipe failed") }
        // Close-on-exec (Glibc's module has no pipe2): no other child started later keeps a
        // copy of these pipes open, so closing our end is seen by this child.
        for fd in outPipe + errPipe + inPipe where fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // From the one thread that lives as long as this process (see `Spawner`), so that the
        // parent-death signal setpriv asks for comes when this process dies, and only then.
        let (result, child) = Spawner.run { [outPipe, errPipe, inPipe] in
            Self.spawn(executable, arguments, out: outPipe, errors: errPipe, input: inPipe, captureErrors: captureErrors, environment: environment)
        }
        close(outPipe[1])
        close(errPipe[1])
        if input { close(inPipe[0]) }
        guard result == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            if input { close(inPipe[1]) }
            throw TestFailure("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        pid = child
        stdout = FileHandle(fileDescriptor: outPipe[0], closeOnDealloc: true)
        stdin = input ? FileHandle(fileDescriptor: inPipe[1], closeOnDealloc: true) : nil
        if captureErrors {
            stderr = FileHandle(fileDescriptor: errPipe[0], closeOnDealloc: true)
        } else {
            close(errPipe[0])
            stderr = nil
        }
    }

    /// posix_spawn of `executable` through setpriv, which asks the kernel for SIGKILL when the
    /// parent dies and then becomes `executable` (the same pid): a crashed or killed test run
    /// leaves no bus or peer behind. Returns posix_spawn's result and the pid.
    private static func spawn(
        _ executable: String, _ arguments: [String], out outPipe: [Int32], errors errPipe: [Int32], input inPipe: [Int32],
        captureErrors: Bool, environment: [String: String]
    ) -> (Int32, pid_t) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        if captureErrors {
            posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        if inPipe[0] >= 0 { posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0) }
        for fd in outPipe + errPipe + inPipe where fd >= 0 { posix_spawn_file_actions_addclose(&actions, fd) }
        // Dispatch's worker threads block signals; a child would inherit that mask and ignore SIGTERM.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([setpriv, "--pdeathsig", "KILL", "--", executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { $1 }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, setpriv, &actions, &attributes, argv, envp)
        return (result, child)
    }

    /// Sends SIGTERM and reaps the child on a thread of its own: a child freed at a test's end
    /// (bleadvd takes about 2 s to shut down, more on a loaded machine) must not hold a thread of
    /// the cooperative pool meanwhile. Nothing can look at a freed child's exit.
    deinit {
        guard status == nil else { return }
        _ = Glibc.kill(pid, SIGTERM)
        let pid = pid
        Thread.detachNewThread { _ = Self.reap(pid) }
    }

    /// util-linux's setpriv, which every Debian has.
    static let setpriv = "/usr/bin/setpriv"

    /// Sends SIGTERM (once) and reaps the child.
    public func terminate() {
        guard status == nil else { return }
        _ = Glibc.kill(pid, SIGTERM)
        _ = wait()
    }

    /// Sends `signal` (e.g. SIGKILL, as a crash) and reaps the child.
    public func kill(_ signal: Int32) {
        guard status == nil else { return }
        _ = Glibc.kill(pid, signal)
        _ = wait()
    }

    /// Waits on a thread of its own for the child to exit: no thread of the cooperative pool
    /// (which the code under test needs to answer the child) is blocked meanwhile.
    public func exitStatus() async -> Int32 {
        await offThePool { self.wait() }
    }

    /// Waits for the child to exit and returns its exit status (128 + signal when killed).
    @discardableResult
    public func wait() -> Int32 {
        if let status { return status }
        let raw = Self.reap(pid)
        let exited = raw & 0x7F == 0
        let code = exited ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
        status = code
        return code
    }

    /// Waits for `pid` to exit and returns waitpid's raw status.
    private static func reap(_ pid: pid_t) -> Int32 {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        return raw
    }
}

/// Runs a program on a thread of its own (see ``runProgram(_:_:environment:)``) and returns its
/// standard output; throws with its standard error when it exits non-zero. A peer program may
/// call back into the code under test, whose handlers need the (two-thread) cooperative pool:
/// blocking a pool thread on the program's exit could deadlock the test.
public func runOffPool(_ executable: String, _ arguments: [String]) async throws -> String {
    let result = try await runProgram(executable, arguments)
    guard result.status == 0 else {
        throw TestFailure("\(executable) \(arguments.joined(separator: " ")) exited \(result.status): " + result.errors)
    }
    return result.output
}

/// The thread children are started from. Linux sends a child its parent-death signal when the
/// thread that started it exits, not only the process; threads of Swift's pool come and go, so
/// every child is started from this one, which lives as long as the process.
enum Spawner {
    /// One job and its result.
    private final class Job: @unchecked Sendable {
        let body: () -> Void
        let done = DispatchSemaphore(value: 0)
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    private static let condition = NSCondition()
    nonisolated(unsafe) private static var jobs: [Job] = []
    nonisolated(unsafe) private static var started = false

    /// Runs `body` on the spawner thread and returns its result once it ran.
    static func run<T>(_ body: @escaping @Sendable () -> T) -> T {
        nonisolated(unsafe) var result: T?
        let job = Job { result = body() }
        condition.lock()
        if !started {
            started = true
            let thread = Thread { serve() }
            thread.name = "test children's spawner"
            thread.start()
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
        job.done.wait()
        return result!
    }

    private static func serve() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.body()
            job.done.signal()
        }
    }
}
