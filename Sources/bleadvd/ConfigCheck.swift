import AdvertiserConfig
import Foundation

extension ConfigCheck {
    /// The config at `path`, read after `bleadvd --check-config` came through it in a child
    /// process: a reload must never take the daemon down (see ``ConfigCheck``).
    static func load(path: String) async throws(ConfigError) -> DaemonConfig {
        if let check = ConfigCheck(arguments: ["bleadvd", "--check-config", "--config", path]) {
            let signal = await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: check.crashSignal()) }
            }
            if let signal { throw crashed(path, signal: signal) }
        }
        return try ConfigParser.load(path: path)
    }
}
