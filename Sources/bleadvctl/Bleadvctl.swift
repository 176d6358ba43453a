import AdvertiserConfig
import AdvertiserControl
import ArgumentParser
import DBus
import Peripheral
#if canImport(Glibc)
import Glibc
#endif

/// `bleadvctl`: switches bleadvd's advertisements on and off, shows their state, previews bytes.
@main
struct Bleadvctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bleadvctl",
        abstract: "Control bleadvd, the Bluetooth LE advertising daemon.",
        discussion: """
            Talks to bleadvd over the system bus (\(ControlAPI.busName)). Names are the keys of \
            the [advertisement.NAME] tables in /etc/bleadvd/bleadvd.toml; no names means all.
            Changing state needs root or membership of group bleadvd.

            Examples:
              bleadvctl on heart          # on air; returns once BlueZ registered it
              bleadvctl off               # everything off air
              bleadvctl status --json     # state per advertisement, for scripts
              bleadvctl set kitchen temperature=21.7   # a BTHome value, changed on air
              bleadvctl preview door      # the bytes on air, without a daemon

            Exit status: 0 done; 1 the operation failed; 2 usage or config error; 3 bleadvd is \
            not running.
            """,
        subcommands: [On.self, Off.self, Status.self, List.self, Set.self, Reload.self, Preview.self])

    /// Synchronous from start to end: no executor and no thread but the main one, so a command
    /// costs little more than a C client's (see docs/BENCHMARKS.md).
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let failure as Failure {
            printError(failure.message)
            Self.exit(withError: ExitCode(failure.code))
        } catch {
            // --help and --version exit 0 through ArgumentParser; a usage error is one line and 2.
            guard exitCode(for: error) != .success else { Self.exit(withError: error) }
            printError(message(for: error) + " (see 'bleadvctl --help')")
            Self.exit(withError: ExitCode(Failure.usage))
        }
    }
}

/// A failure with its exit status and its one line for stderr.
struct Failure: Error {
    var code: Int32
    var message: String

    static let failed: Int32 = 1
    static let usage: Int32 = 2
    static let notRunning: Int32 = 3
}

func printError(_ message: String) {
    var standardError = StandardError()
    print("bleadvctl: " + message, to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        let bytes = Array(string.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
