import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import DBus
import Logging
import Peripheral

extension Daemon {
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
