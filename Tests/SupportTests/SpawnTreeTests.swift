#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Support
import Testing

/// What `Spawn.end` kills besides the program, found from each process's parent, and the OOM
/// score a program starts with.
@Suite("A program's tree")
struct SpawnTreeTests {
    @Test("a program's descendants are its children and theirs, however deep, and no one else")
    func descendants() {
        let parents: [Int32: Int32] = [10: 1, 11: 10, 12: 11, 13: 12, 20: 1, 21: 20, 14: 10]

        let found = Spawn.descendants(of: 10, parents: parents)

        #expect(found == [11, 14, 12, 13])
    }

    @Test("this process's orphans are its children it did not start")
    func orphans() {
        let parents: [Int32: Int32] = [100: 1, 101: 100, 102: 100, 103: 100, 104: 101]

        let orphans = Spawn.orphans(parents: parents, of: 100, started: [101])

        #expect(orphans == [102, 103])
    }

    @Test("a process's parent comes from /proc, past a name with a parenthesis and spaces in it")
    func parentFromProc() {
        let parent = Spawn.parent(of: getpid())

        #expect(parent == getppid())
    }

    @Test("an expendable child starts with the highest OOM score adjustment, and this process keeps its own")
    func expendableChild() throws {
        let before = try String(contentsOfFile: "/proc/self/oom_score_adj", encoding: .utf8)
        let pid = try Spawn.start("/bin/sleep", ["sleep", "300"], stdio: nil, expendable: true)
        defer { Spawn.stop(pid) }

        let child = try String(contentsOfFile: "/proc/\(pid)/oom_score_adj", encoding: .utf8)

        #expect(child == "1000\n")
        #expect(try String(contentsOfFile: "/proc/self/oom_score_adj", encoding: .utf8) == before)
    }
}
