import AdvertiserConfig
import Dispatch
import Logging

extension ConfigCheck {
    /// The config at `path`, read after `bleadvd --check-config` came through it in a child
    /// process: a reload must never take the daemon down (see ``ConfigCheck``). When the child
    /// cannot be started the file is read without the check, and `logger` says so.
    static func load(path: String, logger: Logger) async throws(ConfigError) -> DaemonConfig {
        let check: ConfigCheck
        do {
            check = try ConfigCheck(arguments: ["bleadvd", "--check-config", "--config", path])
        } catch {
            logger.warning("\(error); reading \(path) without it (a file that crashes the TOML parser would stop bleadvd)")
            return try ConfigParser.load(path: path)
        }
        // waitpid blocks: on a queue of its own, not on the actor's executor. (Not Foundation's
        // Thread: it links ICU's 34 MB of data into the binary.)
        let signal = await withCheckedContinuation { continuation in
            DispatchQueue(label: "bleadvd.config-check").async { continuation.resume(returning: check.crashSignal()) }
        }
        if let signal { throw crashed(path, signal: signal) }
        return try ConfigParser.load(path: path)
    }
}
