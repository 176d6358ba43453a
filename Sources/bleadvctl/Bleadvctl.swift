import AdvertiserConfig
import AdvertiserControl
import ArgumentParser
import DBus
import Peripheral
#if canImport(Glibc)
import Glibc
#endif

/// `bleadvctl`, the command: bleadvd's executable runs it when called by that name (a link to
/// it; one executable on disk for both, docs/BENCHMARKS.md).
public enum BleadvctlCommand {
    /// Runs `bleadvctl` with the process's arguments, and exits: a plain bus verb at once
    /// (``PlainCommand``), everything else through ArgumentParser.
    public static func main() -> Never {
        if let command = PlainCommand(CommandLine.arguments.dropFirst()) {
            reserveStandardDescriptors()
            do {
                try command.run()
            } catch {
                exit(after: error)
            }
            exit(0)
        }
        Bleadvctl.main()
        exit(0)
    }
}

/// `bleadvctl`: switches bleadvd's advertisements on and off, shows their state, previews bytes.
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
              bleadvctl set power level=75  # a GATT value; subscribed centrals are notified
              bleadvctl watch --json        # what centrals write, for a script to act on
              bleadvctl pair 60           # a phone may bond in the next minute
              bleadvctl centrals          # who is connected, since when, bonded, MTU
              bleadvctl preview door      # the bytes on air, without a daemon

            A name that starts with '-' (such as -h) goes after '--': bleadvctl on -- -h.
            Text from the config, bleadvd or BlueZ is printed with control characters escaped \
            (\\n, \\u{1B}).

            Exit status: 0 done; 1 the operation failed, timed out, or its output could not be \
            written; 2 usage or config error; 3 bleadvd is not running.
            """,
        version: ControlAPI.version,
        subcommands: [
            On.self, Off.self, Status.self, List.self, Set.self, Event.self, Watch.self, Reload.self, Pair.self, Bonds.self, Forget.self, Improv.self,
            Centrals.self, Disconnect.self, Preview.self,
        ])

    /// Synchronous from start to end: no executor and no thread but the main one, so a command
    /// costs little more than a C client's (see docs/BENCHMARKS.md).
    static func main() {
        reserveStandardDescriptors()
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

/// Exits for `error`: a ``Failure``'s line on stderr and its status; anything else, its
/// description and 1.
func exit(after error: any Error) -> Never {
    if let failure = error as? Failure {
        printError(failure.message)
        Glibc.exit(failure.code)
    }
    printError("\(error)")
    Glibc.exit(Failure.failed)
}

/// A failure with its exit status and its one line for stderr.
struct Failure: Error {
    var code: Int32
    var message: String

    static let failed: Int32 = 1
    static let usage: Int32 = 2
    static let notRunning: Int32 = 3
}

/// One line on stderr, escaped (`Untrusted`): messages carry text from the config, bleadvd
/// and BlueZ.
func printError(_ message: String) {
    var standardError = StandardError()
    print("bleadvctl: " + Untrusted.shown(message, limit: 4096), to: &standardError)
}

/// Writes `text` to standard output, all of it.
/// - Throws: ``Failure`` (exit 1) when it cannot be written: a full disk, a closed descriptor.
func emit(_ text: String) throws {
    var bytes = Array(text.utf8)
    var written = 0
    while written < bytes.count {
        let count = bytes[written...].withUnsafeMutableBytes { Glibc.write(1, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else {
            throw Failure(code: Failure.failed, message: "cannot write the output: \(String(cString: strerror(errno)))")
        }
        written += count
    }
}

/// Descriptors 0, 1 and 2 that were closed (`bleadvctl status >&-`) are opened read-only on
/// /dev/null: the bus connection can never become "standard output", and writing the output
/// fails as it should.
func reserveStandardDescriptors() {
    for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
        _ = open("/dev/null", O_RDONLY)
    }
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        let bytes = Array(string.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
