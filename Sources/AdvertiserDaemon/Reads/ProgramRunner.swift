#if canImport(Glibc)
import Glibc
#endif
import Support

/// How a run of a read program ended.
enum ProgramRun: Hashable, Sendable {
    /// It exited, or a signal ended it (`status` as `waitpid` gives it), having printed `output`.
    case exited(status: Int32, output: [UInt8])
    /// It printed more than it may; it was killed.
    case overflowed
    /// It could not be started (the reason, from errno).
    case unstartable(String)
    /// Its run was cancelled (it ran past its time); it was killed.
    case cancelled
}

/// Runs a read program to its end.
protocol ProgramRunning: Sendable {
    /// Runs `command` with standard input at its end and standard error discarded, keeping its
    /// standard output: at most `outputLimit` bytes, killed (with all it started) when it
    /// prints more or when the calling task is cancelled. `environment` is added to bleadvd's.
    func run(_ command: [String], outputLimit: Int, environment: [String]) async -> ProgramRun
}

/// Runs programs as bleadvd's children (as user bleadvd, in the unit's sandbox, under systemd),
/// each leading a process group of its own, looked at every ``poll``, and the kernel's first
/// choice when memory runs out. A run that ends, however it ends, leaves no process behind,
/// and never waits for one to be reaped (``Spawn/end(_:polling:on:executor:)``).
struct ProgramRunner<C: Clock>: ProgramRunning where C.Duration == Duration {
    /// How often a running program is looked at: what a read waits at most past its end.
    static var poll: Duration { .milliseconds(5) }

    /// What paces the looks, and the reaping of a killed program: bleadvd's event loop's
    /// clock (`ContinuousClock`'s sleeps would start Swift's global pool).
    let clock: C
    /// Where the task that reaps a killed program later runs (bleadvd's event loop; nil:
    /// Swift's global pool).
    let executor: (any TaskExecutor)?

    /// A runner whose looks are paced by `clock`, a killed program reaped on `executor`.
    init(clock: C, executor: (any TaskExecutor)?) {
        self.clock = clock
        self.executor = executor
    }

    func run(_ command: [String], outputLimit: Int, environment: [String]) async -> ProgramRun {
        let (pid, parent): (Int32, Int32)
        do {
            (pid, parent) = try Spawn.startConnected(command[0], command, environment: environment, group: true, expendable: true)
        } catch {
            return .unstartable((error.socketPair ? "socketpair: " : "") + String(cString: strerror(error.code)))
        }
        defer { close(parent) }
        // Nothing to read on its standard input: it sees the end at once.
        shutdown(parent, Int32(SHUT_WR))
        _ = fcntl(parent, F_SETFL, fcntl(parent, F_GETFL) | O_NONBLOCK)
        var output: [UInt8] = []
        while true {
            guard Self.drain(parent, into: &output, limit: outputLimit) else {
                Spawn.end(pid, polling: Self.poll, on: clock, executor: executor)
                return .overflowed
            }
            if let status = Spawn.reaped(pid) {
                let complete = Self.drain(parent, into: &output, limit: outputLimit)
                // What it left running in the background goes with it.
                Spawn.endLeftovers(of: pid, polling: Self.poll, on: clock, executor: executor)
                return complete ? .exited(status: status, output: output) : .overflowed
            }
            guard (try? await clock.sleep(for: Self.poll)) != nil else {
                Spawn.end(pid, polling: Self.poll, on: clock, executor: executor)
                return .cancelled
            }
        }
    }

    /// Reads what is there: false once more than `limit` bytes came.
    private static func drain(_ socket: Int32, into output: inout [UInt8], limit: Int) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { return true }
            guard output.count + count <= limit else { return false }
            output += buffer[..<count]
        }
    }
}
