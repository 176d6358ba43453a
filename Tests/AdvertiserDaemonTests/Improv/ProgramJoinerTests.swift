@testable import AdvertiserDaemon
import Foundation
import Glibc
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// The join program as a process: what it leaves behind when its time runs out.
@Suite("Improv's join program", .timeLimit(.minutes(3)))
struct ProgramJoinerTests {
    /// Whether `pid` runs: not when it is gone or a zombie no one reaped yet.
    static func running(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let state = stat.split(separator: ")").last?.split(separator: " ").first else { return false }
        return state != "Z" && state != "X"
    }

    /// A join by a program that starts `child` (a shell command line) in the background, writes
    /// its pid, and sleeps: the joiner's outcome, the clock it polls by, and the child's pid once
    /// written.
    func joinStarting(_ child: String) async throws -> (outcome: Recorder<String>, clock: ManualClock, child: Int32) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("joiner-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let program = folder.appendingPathComponent("join").path
        let started = folder.appendingPathComponent("child").path
        try writeExecutable("#!/bin/sh\n\(child) &\necho $! > '\(started).new' && mv '\(started).new' '\(started)'\nsleep 300\n", to: program)
        let clock = ManualClock()
        let joiner = ProgramJoiner(program: program, clock: clock, executor: nil)
        let outcome = Recorder<String>()
        Task {
            do {
                _ = try await joiner.join(Improv.Credentials(ssid: Array("Home".utf8), password: Array("hunter22".utf8))!)
                await outcome.record("joined")
            } catch {
                await outcome.record("\(error)")
            }
        }
        try await eventually("the join program started its child") { FileManager.default.fileExists(atPath: started) }
        return (outcome, clock, Int32(try String(contentsOfFile: started, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))!)
    }

    /// Moves `clock` a second at a time until the join has an outcome: its time runs out.
    func runOut(_ clock: ManualClock, _ outcome: Recorder<String>) async throws {
        while await outcome.values.isEmpty {
            clock.advance(by: .seconds(1))
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    @Test("a program still running when its time runs out is killed with everything it started in the background")
    func timeoutKillsTheGroup() async throws {
        let (outcome, clock, background) = try await joinStarting("sleep 300")
        #expect(Self.running(background))

        try await runOut(clock, outcome)

        #expect(await outcome.values.first?.contains("did not finish within 90 s; killed") == true)
        try await eventually("the background child is gone") { !Self.running(background) }
    }

    @Test("a program still running when its time runs out is killed with what it started in a session of its own")
    func timeoutKillsASessionOfItsOwn() async throws {
        let (outcome, clock, escaped) = try await joinStarting("setsid sleep 300")
        defer { kill(escaped, SIGKILL) }
        try await eventually("\(escaped) has a session of its own") { getsid(escaped) == escaped }

        try await runOut(clock, outcome)

        #expect(await outcome.values.first?.contains("did not finish within 90 s; killed") == true)
        try await eventually("\(escaped) is gone") { !Self.running(escaped) }
    }
}
