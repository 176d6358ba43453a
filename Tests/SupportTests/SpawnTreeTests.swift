#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Support
import Synchronization
import TestSupport
import Testing

/// What `Spawn.end` kills besides the program, found from each process's parent, where it reaps
/// one later, and the OOM score a program starts with.
@Suite("A program's tree", .timeLimit(.minutes(3)))
struct SpawnTreeTests {
    @Test("a program's descendants are its children and theirs, however deep, and no one else")
    func descendants() {
        let parents: [Int32: Int32] = [10: 1, 11: 10, 12: 11, 13: 12, 20: 1, 21: 20, 14: 10]

        let found = Spawn.descendants(of: 10, parents: parents)

        #expect(found == [11, 14, 12, 13])
    }

    @Test("this process's orphans are its children it did not start")
    func orphans() {
        let orphans = Spawn.orphans(children: [103, 101, 102], started: [101])

        #expect(orphans == [102, 103])
    }

    @Test("this process's children are read from its own /proc entry: a child started here is among them, and not once reaped")
    func ownChildren() throws {
        let pid = try Spawn.start("/bin/sleep", ["sleep", "300"], stdio: nil)

        let whileRunning = Spawn.ownChildren()
        Spawn.stop(pid)

        #expect(whileRunning.contains(pid))
        #expect(!Spawn.ownChildren().contains(pid))
    }

    @Test("a process's parent comes from /proc, past a name with a parenthesis and spaces in it")
    func parentFromProc() {
        let parent = Spawn.parent(of: getpid())

        #expect(parent == getppid())
    }

    /// This process's OOM score adjustment, read while no child starts (other tests start
    /// expendable children meanwhile, and this process holds 1000 while one starts).
    static func ownScore() -> String? {
        Spawn.started.withLock { _ in try? String(contentsOfFile: "/proc/self/oom_score_adj", encoding: .utf8) }
    }

    @Test("an expendable child starts with the highest OOM score adjustment, and this process keeps its own")
    func expendableChild() throws {
        let before = Self.ownScore()
        let pid = try Spawn.start("/bin/sleep", ["sleep", "300"], stdio: nil, expendable: true)
        defer { Spawn.stop(pid) }

        let child = try String(contentsOfFile: "/proc/\(pid)/oom_score_adj", encoding: .utf8)

        #expect(child == "1000\n")
        #expect(before != nil && Self.ownScore() == before)
    }

    /// A task executor that counts the jobs it runs (on Dispatch's pool).
    final class CountingExecutor: TaskExecutor, @unchecked Sendable {
        let jobs = Mutex(0)

        func enqueue(_ job: consuming ExecutorJob) {
            jobs.withLock { $0 += 1 }
            let job = UnownedJob(job)
            DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    // A killed program that cannot be reaped at once: a tracer that never waits holds its zombie
    // (ptrace(2)) until it exits. The program allows any tracer, for Yama's ptrace_scope 1.
    @Test("a killed program that cannot be reaped at once is reaped later by a task on the executor given, once it can be")
    func reapedLaterOnTheExecutor() async throws {
        let folder = try ScratchFolder("tree")
        let program = folder.url.appendingPathComponent("held").path
        try writeExecutable(
            """
            #!/usr/bin/env python3
            import ctypes, time
            ctypes.CDLL(None).prctl(0x59616d61, ctypes.c_ulong(2**64 - 1), 0, 0, 0)
            print('ready', flush=True)
            time.sleep(300)

            """, to: program)
        let (pid, socket) = try Spawn.startConnected(program, [program], group: true)
        defer { close(socket) }
        var byte: UInt8 = 0
        #expect(read(socket, &byte, 1) == 1)
        let tracer = Process()
        tracer.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        tracer.arguments = ["python3", "-c", "import ctypes, time; ctypes.CDLL(None).ptrace(0x4206, \(pid), None, None); time.sleep(60)"]
        try tracer.run()
        defer { kill(tracer.processIdentifier, SIGKILL) }
        try await eventually("the program is traced") { Self.tracer(of: pid) != 0 }
        let executor = CountingExecutor()

        let status = Spawn.end(pid, polling: .milliseconds(5), on: ContinuousClock(), executor: executor)

        #expect(status == nil)
        kill(tracer.processIdentifier, SIGKILL)
        try await eventually("the program is reaped") { access("/proc/\(pid)", F_OK) != 0 }
        #expect(executor.jobs.withLock { $0 } > 0)
    }

    /// The pid of `pid`'s tracer (0: none), from /proc.
    static func tracer(of pid: Int32) -> Int32 {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("TracerPid:") }
        return line.flatMap { Int32($0.dropFirst("TracerPid:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
    }
}
