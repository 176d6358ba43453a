import AdvertiserConfig
import Dispatch

extension ConfigCheck {
    /// The config at `path`, read after `bleadvd --check-config` came through it in a child
    /// process: a reload must never take the daemon down (see ``ConfigCheck``).
    static func load(path: String) async throws(ConfigError) -> DaemonConfig {
        if let check = ConfigCheck(arguments: ["bleadvd", "--check-config", "--config", path]) {
            // waitpid blocks: on a queue of its own, not on the actor's executor. (Not Foundation's
            // Thread: it links ICU's 34 MB of data into the binary.)
            let signal = await withCheckedContinuation { continuation in
                DispatchQueue(label: "bleadvd.config-check").async { continuation.resume(returning: check.crashSignal()) }
            }
            if let signal { throw crashed(path, signal: signal) }
        }
        return try ConfigParser.load(path: path)
    }
}
