import AdvertiserConfig
import AdvertiserControl
import DBus
package import Peripheral

/// The control API's pairing calls, which the pairing component answers (``Pairing``).
extension Daemon {
    package func pair(for seconds: Int?, by caller: String) async throws(PeripheralError) -> (method: PairingMethod, seconds: Int) {
        try await pairing.pair(for: seconds, by: caller)
    }

    package func confirm(_ central: String, matches: Bool, by caller: String) async throws(PeripheralError) {
        try await pairing.confirm(central, matches: matches, by: caller)
    }

    package func bonds() async throws(PeripheralError) -> [Bond] {
        try await pairing.bonds()
    }

    package func forget(_ central: String, any: Bool) async throws(PeripheralError) {
        try await pairing.forget(central, any: any)
    }

    package func adopt(_ central: String) async throws(PeripheralError) {
        try await pairing.adopt(central)
    }

    /// Whether a characteristic of `services` asks for a bond (its `security` is not none): only
    /// then is the pairing agent registered.
    static func bondNeeded(_ services: some Sequence<ConfiguredService>) -> Bool {
        services.contains { $0.service.characteristics.contains { $0.security != .none } }
    }
}
