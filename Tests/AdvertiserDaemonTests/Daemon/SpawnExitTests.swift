import AdvertiserConfig
import Foundation
import Glibc
import PeripheralMocks
import TestSupport
import Testing
import Support

/// `Spawn.exit(of:)`: how the daemon waits for the children it starts (Improv's identify
/// command, the join program), on the clock it is given.
@Suite("A child's exit, waited for on a clock", .timeLimit(.minutes(3)))
struct SpawnExitTests {
    @Test("a child that exits within the limit gives its status, and is reaped")
    func exitStatus() async throws {
        let pid = try Spawn.start("/bin/sh", ["sh", "-c", "exit 3"], stdio: nil)

        let status = await Spawn.exit(of: pid, within: .seconds(30), polling: .milliseconds(10), on: ContinuousClock(), executor: nil)

        #expect(status.map { ($0 >> 8) & 0xFF } == 3)
        #expect(waitpid(pid, nil, WNOHANG) == -1 && errno == ECHILD)
    }

    @Test("a child still running when the limit passes on the clock is killed, there is no status, and it is reaped on the clock")
    func killedAtTheLimit() async throws {
        let clock = ManualClock()
        let pid = try Spawn.start("/bin/sleep", ["sleep", "300"], stdio: nil, group: true)
        let outcome = Recorder<Int32?>()
        Task { await outcome.record(await Spawn.exit(of: pid, within: .seconds(2), polling: .milliseconds(100), on: clock, executor: nil)) }

        while await outcome.values.isEmpty {
            clock.advance(by: .milliseconds(100))
            try await Task.sleep(for: .milliseconds(1))
        }

        #expect(await outcome.values == [nil])
        try await eventually("\(pid) is reaped") {
            clock.advance(by: .milliseconds(100))
            return access("/proc/\(pid)", F_OK) != 0
        }
    }
}
