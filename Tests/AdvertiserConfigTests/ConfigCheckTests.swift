import AdvertiserConfig
import Glibc
import Testing

/// The child process that reads a config file before bleadvd or `bleadvctl preview` does:
/// run here with /bin/sh standing in for the program, so each outcome can be produced.
@Suite("Config check in a child process")
struct ConfigCheckTests {
    @Test("A child killed by a signal is reported with that signal")
    func crashIsReported() throws {
        let check = try ConfigCheck(executable: "/bin/sh", arguments: ["sh", "-c", "kill -ABRT $$"])

        let signal = check.crashSignal()

        #expect(signal == SIGABRT)
    }

    @Test("A child that exits, even with an error, is not a crash")
    func exitIsNotACrash() throws {
        let check = try ConfigCheck(executable: "/bin/sh", arguments: ["sh", "-c", "exit 2"])

        let signal = check.crashSignal()

        #expect(signal == nil)
    }

    @Test("A child that cannot be started is an error that says why")
    func spawnFailureSaysWhy() {
        #expect {
            try ConfigCheck(executable: "/nonexistent/bleadvd", arguments: ["bleadvd"])
        } throws: { error in
            "\(error)" == "cannot start the config check's child process: No such file or directory"
        }
    }
}
