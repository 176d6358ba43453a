@testable import AdvertiserDaemon
import Foundation
import Glibc
import TestSupport
import Testing

/// The read programs' runner with real processes: what a program is given, what is kept of
/// what it prints, and what is left of it once its run ends.
@Suite("A read program as a process", .timeLimit(.minutes(3)))
struct ProgramRunnerTests {
    let folder: ScratchFolder

    init() throws {
        folder = try ScratchFolder("runner")
    }

    /// An executable script in the test's folder.
    func script(_ name: String, _ body: String) throws -> String {
        let path = folder.url.appendingPathComponent(name).path
        try writeExecutable("#!/bin/sh\n" + body, to: path)
        return path
    }

    /// A run of `command`, started again while it is "Text file busy": a child another test
    /// spawns at the moment the script is written holds its descriptor until that child's exec
    /// closes it.
    func run(_ command: [String]) async -> ProgramRun {
        for _ in 0..<50 {
            let run = await ProgramRunner(clock: ContinuousClock(), executor: nil).run(command, outputLimit: 4096, environment: [])
            guard run == .unstartable("Text file busy") else { return run }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return .unstartable("Text file busy")
    }

    @Test("a program's output and exit status come back whole")
    func outputAndStatus() async throws {
        let program = try script("temp", "echo 21.5\nexit 3\n")

        let run = await run([program])

        #expect(run == .exited(status: 3 << 8, output: Array("21.5\n".utf8)))
    }

    @Test("its arguments are the config's alone, and its standard input is at its end at once")
    func argumentsAndInput() async throws {
        let program = try script("args", "printf '%s|' \"$@\"\ncat\necho end\n")

        let run = await run([program, "cpu", "two words"])

        #expect(run == .exited(status: 0, output: Array("cpu|two words|end\n".utf8)))
    }

    // The runner has no timeout of its own: a program it did not kill would print forever, and
    // the run would not end within the suite's time limit. (It asserted less than 5 s here
    // until a fresh clone's make test, its machine busy, took 5.8 s.)
    @Test("a program that prints more than the limit is killed, not left to print")
    func overflowKills() async throws {
        let program = try script("chatty", "while :; do echo 0123456789abcdef; done\n")

        let run = await run([program])

        #expect(run == .overflowed)
    }

    @Test("a program that cannot be run says why")
    func unstartable() async throws {
        let run = await ProgramRunner(clock: ContinuousClock(), executor: nil).run([folder.url.appendingPathComponent("missing").path], outputLimit: 4096, environment: [])

        #expect(run == .unstartable("No such file or directory"))
    }

    @Test("a cancelled run kills the program and everything it started in the background")
    func cancelKillsTheGroup() async throws {
        let pids = folder.url.appendingPathComponent("pids").path
        let program = try script("slow", "sleep 300 &\necho $! $$ > '\(pids).new' && mv '\(pids).new' '\(pids)'\nsleep 300\n")
        let run = Task { await self.run([program]) }
        try await eventually("the program started its background child") { FileManager.default.fileExists(atPath: pids) }
        let started = try String(contentsOfFile: pids, encoding: .utf8).split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }

        run.cancel()

        #expect(await run.value == .cancelled)
        for pid in started { try await eventually("\(pid) is gone") { !ProgramJoinerTests.running(pid) } }
    }

    @Test("a cancelled run kills what the program started in a session of its own, out of its group")
    func cancelKillsASessionOfItsOwn() async throws {
        let pids = folder.url.appendingPathComponent("pids").path
        let program = try script("escapes", "setsid sleep 300 &\necho $! > '\(pids).new' && mv '\(pids).new' '\(pids)'\nsleep 300\n")
        let run = Task { await self.run([program]) }
        try await eventually("the program started its child in a session of its own") { FileManager.default.fileExists(atPath: pids) }
        let escaped = try #require(Int32(try String(contentsOfFile: pids, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        defer { kill(escaped, SIGKILL) }
        try await eventually("\(escaped) has a session of its own") { getsid(escaped) == escaped }

        run.cancel()

        #expect(await run.value == .cancelled)
        try await eventually("\(escaped) is gone") { !ProgramJoinerTests.running(escaped) }
    }
}
