import AdvertiserConfig
import Foundation

/// Reads the config file in a child process before reading it here. TOMLKit's parser
/// (toml++) aborts the process on some malformed files — `"\n[\n\n"` fails an assertion in its
/// key parser; libFuzzer found it in seconds (`make fuzz`) — and a reload must never take the
/// daemon down. The child is bleadvd itself with `--check-config`; only when it came through
/// is the file parsed in this process.
enum ConfigCheck {
    /// The config at `path`, read safely: a file that crashes the parser is a `ConfigError`.
    static func load(path: String) async throws(ConfigError) -> DaemonConfig {
        if let signal = await crashSignal(checking: path) {
            throw ConfigError(
                file: path, line: nil, key: "",
                message: "crashes the TOML parser (signal \(signal) in a child process; nothing was read): "
                    + "look for a table header or a key cut short, e.g. a '[' at the end of a line")
        }
        return try ConfigParser.load(path: path)
    }

    /// Runs `bleadvd --check-config --config PATH` and returns the signal that killed it, or
    /// nil when it exited (whatever its status: a config error is reported by the parse here).
    private static func crashSignal(checking path: String) async -> Int32? {
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = ["bleadvd", "--check-config", "--config", path]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // No core dump and no backtrace for a crash that is expected and reported.
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment["NOTIFY_SOCKET"] = nil
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        guard posix_spawn(&pid, "/proc/self/exe", &actions, nil, argv, envp) == 0 else { return nil }
        let child = pid
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(child, &status, 0) == -1 && errno == EINTR {}
                let signal = status & 0x7F
                continuation.resume(returning: signal != 0 && signal != 0x7F ? signal : nil)
            }
        }
    }
}
