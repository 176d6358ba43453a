import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import DBus
import Logging
import Peripheral

extension Daemon {
    /// The services in force as one application, in name order (Improv's only while it is
    /// offered); nil when there are none.
    func application() async -> GATTApplication? {
        let improvOffered = improvOffered
        return await values.application { name in Self.isOffered(name, improvOffered: improvOffered) }
    }

    /// Whether what `name` configures may be on air: all but Improv's while it is withheld.
    func isOffered(_ name: String) -> Bool {
        Self.isOffered(name, improvOffered: improvOffered)
    }

    /// ``isOffered(_:)`` as a value of `improvOffered`, for a predicate handed to another actor.
    static func isOffered(_ name: String, improvOffered: Bool) -> Bool {
        name != ImprovConfig.name || improvOffered
    }

    /// The control API's view of the services: each is where the application is (`status`).
    func serviceStates(_ status: BluetoothModule<C>.Status?) async -> [String: AdvertisementState] {
        guard let status else { return [:] }
        var state = state(status)
        state.kind = .service
        return await values.serviceValues.mapValues { shown in
            var service = state
            service.values = shown.all
            return service
        }
    }
}
