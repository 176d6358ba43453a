#if canImport(Glibc)
import Glibc
#endif
import Support
import Testing

/// A child started on a socket pair: what the three programs that talk to a child (the config
/// check, Improv's join program, a read program) share.
@Suite("A child on a socket pair", .timeLimit(.minutes(3)))
struct SpawnTests {
    @Test("the child's standard input and output are its end: what this end sends comes back through cat")
    func childTalksOnTheSocket() throws {
        let (pid, socket) = try Spawn.startConnected("/bin/cat", ["cat"])
        defer { close(socket) }

        _ = Array("ping".utf8).withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
        shutdown(socket, Int32(SHUT_WR))
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = recv(socket, &buffer, buffer.count, Int32(MSG_WAITALL))
        let status = Spawn.status(waitingFor: pid)

        #expect(Array(buffer.prefix(max(0, count))) == Array("ping".utf8))
        #expect(status == 0)
    }

    @Test("a program that cannot be started says why: the errno of its start, not of the socket pair")
    func failedStartSaysWhy() {
        let failure = #expect(throws: Spawn.Failure.self) { try Spawn.startConnected("/nonexistent/program", ["program"]) }

        #expect(failure?.code == ENOENT)
        #expect(failure?.socketPair == false)
    }
}
