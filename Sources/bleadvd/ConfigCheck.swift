import AdvertiserConfig
import Dispatch

extension ConfigCheck {
    /// The config at `path`, checked in a child process first (``ConfigCheck``), read on a
    /// queue of its own: the check blocks, and must not block an actor's executor. (Not
    /// Foundation's Thread: it links ICU's 34 MB of data into the binary.)
    static func load(path: String) async throws(ConfigError) -> DaemonConfig {
        let result = await withCheckedContinuation { continuation in
            DispatchQueue(label: "bleadvd.config-check").async {
                continuation.resume(returning: Result { () throws(ConfigError) in
                    try ConfigCheck.load(path: path, arguments: ["bleadvd", "--check-config", "--config", path])
                })
            }
        }
        return try result.get()
    }
}
