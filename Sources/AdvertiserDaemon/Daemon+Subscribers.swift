package import AdvertiserControl
import AdvertiserConfig
import DBus
package import Peripheral

/// The values of secured characteristics (`security` not none) and an encrypted BTHome sensor's
/// readings reach only those ``LocalTrust`` trusts: `Status` leaves them out for anyone else, the broadcasts
/// (`ValuesChanged`, `Written`) never carry them, and a trusted client that calls `Subscribe`
/// is sent every event whole, as signals to it alone, until it leaves the bus.
extension Daemon: ValuesAnnouncing {

    package func status(for caller: String) async -> [String: AdvertisementState] {
        var states = await status()
        let services = await values.serviceValues
        let advertisements = await values.advertisementValues(public: true)
        let hides = services.values.contains { $0.everyone.count < $0.all.count }
            || advertisements.contains { $0.value.count < (states[$0.key]?.values.count ?? 0) }
        guard hides, await !isTrusted(caller) else { return states }
        for (name, shown) in services where states[name]?.kind == .service {
            states[name]!.values = shown.everyone
        }
        for (name, shown) in advertisements where states[name]?.kind != .service {
            states[name]?.values = shown
        }
        return states
    }

    package func subscribe(_ caller: String) async throws(PeripheralError) {
        guard let uid = await bus.user(of: caller), trusts(uid) else {
            throw PeripheralError(.accessDenied, "the values of secured characteristics go to root, bleadvd's user and the members of group \(LocalTrust.groupName) alone")
        }
        guard !subscribers.contains(caller) else { return }
        try subscribers.admit(caller, uid: uid)
        post.yield(.subscriber(caller))
    }

    /// Whether the process behind `caller` (a unique name) may see secured values; not when
    /// the bus cannot tell.
    func isTrusted(_ caller: String) async -> Bool {
        guard let uid = await bus.user(of: caller) else { return false }
        return trusts(uid)
    }

    /// Waits until `subscriber` leaves the bus, then sends it nothing more. A child of the
    /// loop's task group.
    func follow(_ subscriber: String) async {
        await bus.departure(of: subscriber)
        subscribers.remove(subscriber)
    }

    /// Announces a service's or an advertisement's values on air: the broadcast without the
    /// secured ones, each subscriber all of them.
    func announceValues(_ name: String, all: [String: String], everyone: [String: String]) async {
        await bus.valuesChanged(name, everyone, to: nil)
        for subscriber in subscribers.names { await bus.valuesChanged(name, all, to: subscriber) }
    }

    /// Announces a central's write: the broadcast without the value when the characteristic
    /// is secured, each subscriber with it (`value` nil: a secret, shown to no one).
    func announceWrite(_ id: GATTCharacteristicID, _ value: GATTValue?, secured: Bool, central: String) async {
        await bus.written(id, secured ? nil : value, central: central, to: nil)
        for subscriber in subscribers.names { await bus.written(id, value, central: central, to: subscriber) }
    }
}
