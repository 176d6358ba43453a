package import AdvertiserControl
import AdvertiserConfig
import DBus
package import Peripheral

/// The values of secured characteristics (`security` not none) and an encrypted BTHome sensor's
/// readings reach only those ``LocalTrust`` trusts: `Status` leaves them out for anyone else, the
/// broadcasts (`ValuesChanged`, `Written`) never carry them, and a trusted client that calls
/// `Subscribe` is sent every event whole, as signals to it alone, until it leaves the bus
/// (``Announcements``, Values' port).
extension Daemon {

    package func status(for caller: String) async -> [String: AdvertisementState] {
        var states = await status()
        let services = await values.serviceValues
        let advertisements = await values.advertisementValues(public: true)
        let hides = services.values.contains { $0.everyone.count < $0.all.count }
            || advertisements.contains { $0.value.count < (states[$0.key]?.values.count ?? 0) }
        guard hides, await !announcements.isTrusted(caller) else { return states }
        for (name, shown) in services where states[name]?.kind == .service {
            states[name]!.values = shown.everyone
        }
        for (name, shown) in advertisements where states[name]?.kind != .service {
            states[name]?.values = shown
        }
        return states
    }

    package func subscribe(_ caller: String) async throws(PeripheralError) {
        if try await announcements.subscribe(caller) { post.yield(.subscriber(caller)) }
    }
}
