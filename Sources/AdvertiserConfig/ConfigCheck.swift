#if canImport(Glibc)
import Glibc
#endif

/// Reads a config file in a child process first. TOMLKit's parser (toml++) aborts the process
/// on some malformed files — `"\n[\n\n"` fails an assertion in its key parser; libFuzzer finds
/// it in seconds (`make fuzz`) — so bleadvd and `bleadvctl preview` run themselves on the file
/// (`arguments`: bleadvd's `--check-config`, bleadvctl's `preview` with `CHECKING` set) and
/// parse it here only when that child came through.
public struct ConfigCheck: Sendable {
    /// Set in the child's environment, so that it parses without checking again.
    public static let checking = "BLEADVD_CONFIG_CHECK"

    let child: pid_t

    /// Why the child could not be started.
    public struct SpawnFailure: Error, CustomStringConvertible {
        /// posix_spawn's error number.
        public let code: Int32

        /// "cannot start the config check's child process: " and the system's reason.
        public var description: String {
            "cannot start the config check's child process: \(String(cString: strerror(code)))"
        }
    }

    /// Starts `executable` (by default this program again) with `arguments` (the first is its
    /// name), its output thrown away. When it cannot be started the caller decides whether to
    /// parse without the check, and should say so.
    /// - Parameters:
    ///   - executable: The program to start; this one by default.
    ///   - arguments: Its arguments, the first being its name.
    public init(executable: String = "/proc/self/exe", arguments: [String]) throws(SpawnFailure) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // No backtrace or core for a crash that is expected and reported; no systemd notices.
        var environment: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if !text.hasPrefix("NOTIFY_SOCKET=") && !text.hasPrefix("SWIFT_BACKTRACE=") { environment.append(text) }
            entry += 1
        }
        environment += ["SWIFT_BACKTRACE=enable=no", "\(Self.checking)=1"]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        // A clean start: no blocked signals, every signal at its default (the parent's threads
        // may block some, and Dispatch ignores those it watches), so a crash is a crash.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let code = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard code == 0 else { throw SpawnFailure(code: code) }
        child = pid
    }

    /// Waits for the child; the signal that killed it, or nil when it exited (whatever its
    /// status: a config error is reported by the parse that follows).
    public func crashSignal() -> Int32? {
        var status: Int32 = 0
        while waitpid(child, &status, 0) == -1 && errno == EINTR {}
        let signal = status & 0x7F
        return signal != 0 && signal != 0x7F ? signal : nil
    }

    /// The error for a file that crashed the child with `signal`.
    public static func crashed(_ path: String, signal: Int32) -> ConfigError {
        ConfigError(
            file: path, line: nil, key: "",
            message: "crashes the TOML parser (signal \(signal) in a child process; nothing was read): "
                + "look for a table header, key, array or inline table cut short or not closed, e.g. a '[' at the end of a line or '[ }'")
    }

    /// Whether this process is such a child.
    public static var isChild: Bool { getenv(checking) != nil }
}
