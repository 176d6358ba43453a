import Foundation
import TestSupport

/// Starts the real bleadvd on `bus` with `config` written to a file in the bus's folder, its
/// state directory there too; returns it, the socket it notifies and the config's path.
func startBleadvd(
    on bus: PrivateBus, config: String, arguments: [String] = [], captureErrors: Bool = true,
    environment: [String: String] = [:]
) throws -> (Child, NotifySocket, String) {
    let path = bus.folder.appendingPathComponent("bleadvd.toml").path
    try config.write(toFile: path, atomically: true, encoding: .utf8)
    let notify = try NotifySocket(in: bus.folder)
    let state = bus.folder.appendingPathComponent("state").path
    let daemon = try Child(
        product("bleadvd"), ["--config", path, "--state-directory", state] + arguments, captureErrors: captureErrors,
        environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "NOTIFY_SOCKET": notify.path].merging(environment) { $1 })
    return (daemon, notify, path)
}
