@testable import AdvertiserConfig
import Foundation
import Glibc
import Testing

/// The child process that parses a config file before bleadvd or `bleadvctl preview` does:
/// run here with /bin/sh standing in for the program, so each outcome can be produced.
@Suite("Config check in a child process")
struct ConfigCheckTests {
    static func check(_ script: String, input: String = "", timeout: Int32 = ConfigCheck.timeoutMilliseconds) -> ConfigCheck.Verdict {
        ConfigCheck.run("/bin/sh", ["sh", "-c", script], input: Array(input.utf8), timeoutMilliseconds: timeout)
    }

    @Test("A child killed by a signal is reported with that signal")
    func crashIsReported() {
        let verdict = Self.check("kill -ABRT $$")

        #expect(verdict == .crashed(SIGABRT))
    }

    @Test("A child that reads the text and exits 0 accepts it")
    func exitZeroAccepts() {
        let verdict = Self.check("cat > /dev/null", input: "adapter = \"hci0\"\n")

        #expect(verdict == .accepted)
    }

    @Test("The child reads exactly the bytes it was given, and its error line comes back")
    func childAnswersWithItsErrorLine() {
        let verdict = Self.check("cat; exit 2", input: "the bytes read once\n")

        #expect(verdict == .refused("the bytes read once\n"))
    }

    @Test("A child's answer is cut at the most that is read, however much it writes")
    func answerIsBounded() {
        let verdict = Self.check("cat > /dev/null; head -c 1000000 /dev/zero | tr '\\0' x; exit 2", input: "x")

        #expect(verdict == .refused(String(repeating: "x", count: ConfigCheck.maximumAnswer)))
    }

    @Test("A child that dies before reading a large file is a crash, not a hang or a SIGPIPE")
    func earlyDeathIsACrash() {
        let verdict = Self.check("kill -SEGV $$", input: String(repeating: "a = 1\n", count: 150_000))

        #expect(verdict == .crashed(SIGSEGV))
    }

    @Test("A child that does not finish in time is killed and the file refused")
    func hangIsRefused() {
        let verdict = Self.check("exec sleep 30", timeout: 200)

        #expect(verdict == .failed("the check took longer than 200 ms"))
    }

    @Test("A child that cannot be started is a failure that says why")
    func spawnFailureSaysWhy() {
        let verdict = ConfigCheck.run("/nonexistent/bleadvd", ["bleadvd"], input: [])

        #expect(verdict == .failed("cannot start the child process: No such file or directory"))
    }

    @Test("The bytes checked are the bytes applied, even when the file changes during the check")
    func bytesCheckedAreBytesApplied() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString).toml").path
        defer { unlink(path) }
        try "[advertisement.first]\nlocal_name = \"A\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        // The stand-in child accepts, after replacing the file by one that crashes TOMLKit.
        let script = "cat > /dev/null; printf '\\n[\\n\\n' > '\(path)'; exit 0"

        let config = try ConfigCheck.load(path: path, arguments: ["sh", "-c", script], executable: "/bin/sh")

        #expect(config.names == ["first"])
    }

    @Test("A file the child refuses is refused with the child's error, and never parsed here")
    func refusedFileIsNotParsed() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("check-\(UUID().uuidString).toml").path
        defer { unlink(path) }
        // Text that would crash TOMLKit here: the test process survives because it never parses it.
        try "\n[\n\n".write(toFile: path, atomically: true, encoding: .utf8)

        #expect {
            try ConfigCheck.load(path: path, arguments: ["sh", "-c", "cat > /dev/null; printf 'x.toml:2: no'; exit 2"], executable: "/bin/sh")
        } throws: { error in
            "\(error)" == "x.toml:2: no"
        }
    }
}
