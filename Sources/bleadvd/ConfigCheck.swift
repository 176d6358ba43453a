import AdvertiserConfig
import DBus
import Events

extension ConfigCheck {
    /// The config at `path`, checked in a child process first (``ConfigCheck``), read on a
    /// thread of its own that ends with the check: the check blocks, and must not block the
    /// event loop. (Neither Swift's pool, whose first thread would wake bleadvd every second
    /// from then on, nor Foundation's Thread, which links ICU's 34 MB of data into the binary.)
    static func load(path: String) async throws(ConfigError) -> DaemonConfig {
        let result = await EventLoop.detached(name: "config-check") {
            Result { () throws(ConfigError) in
                try ConfigCheck.load(path: path, arguments: ["bleadvd", "--check-config", "--config", path])
            }
        }
        return try result.get()
    }
}
