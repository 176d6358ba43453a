import AdvertiserControl
import DBus
import Peripheral

/// Values' port, and the control API's subscriptions: announces values and writes on the bus,
/// to everyone without the secured ones and whole to each subscriber, and keeps the subscribers
/// (``Subscribers``) until each leaves the bus. The values of secured characteristics (`security`
/// not none) and an encrypted BTHome sensor's readings reach only those ``LocalTrust`` trusts.
actor Announcements: ValuesAnnouncing {
    let bus: any ControlBus
    /// Whether a local user (by id) may see the values of secured characteristics.
    let trusts: @Sendable (UInt32) -> Bool
    /// The clients sent every event whole (`Subscribe`), until each leaves the bus.
    var subscribers = Subscribers()

    init(bus: any ControlBus, trusts: @escaping @Sendable (UInt32) -> Bool) {
        self.bus = bus
        self.trusts = trusts
    }

    /// Runs on the bus's event loop, as the daemon.
    nonisolated var unownedExecutor: UnownedSerialExecutor { bus.eventLoop.asUnownedSerialExecutor() }

    /// Takes `caller` as a subscriber; true when it is new, to be followed (``follow(_:)``).
    /// - Throws: `accessDenied` for a caller ``LocalTrust`` does not trust; `failed` when its
    ///   user, or everyone, has all the places it may (``Subscribers``).
    func subscribe(_ caller: String) async throws(PeripheralError) -> Bool {
        guard let uid = await bus.user(of: caller), trusts(uid) else {
            throw PeripheralError(.accessDenied, "the values of secured characteristics go to root, bleadvd's user and the members of group \(LocalTrust.groupName) alone")
        }
        guard !subscribers.contains(caller) else { return false }
        try subscribers.admit(caller, uid: uid)
        return true
    }

    /// Waits until `subscriber` leaves the bus, then sends it nothing more. A child of the
    /// daemon's task group.
    func follow(_ subscriber: String) async {
        await bus.departure(of: subscriber)
        subscribers.remove(subscriber)
    }

    /// Whether the process behind `caller` (a unique name) may see secured values; not when
    /// the bus cannot tell.
    func isTrusted(_ caller: String) async -> Bool {
        guard let uid = await bus.user(of: caller) else { return false }
        return trusts(uid)
    }

    /// Announces a service's or an advertisement's values on air: the broadcast without the
    /// secured ones, each subscriber all of them.
    func announceValues(_ name: String, all: [String: String], everyone: [String: String]) async {
        await bus.emit(ControlAPI.ValuesChanged(name: name, values: everyone))
        for subscriber in subscribers.names { await bus.emit(ControlAPI.ValuesChanged(name: name, values: all), to: subscriber) }
    }

    /// Announces a central's write: the broadcast without the value when the characteristic
    /// is secured, each subscriber with it (`value` nil: a secret, shown to no one).
    func announceWrite(_ id: GATTCharacteristicID, _ value: GATTValue?, secured: Bool, central: String) async {
        await bus.emit(ControlAPI.Written(id, value: secured ? nil : value, central: central))
        for subscriber in subscribers.names { await bus.emit(ControlAPI.Written(id, value: value, central: central), to: subscriber) }
    }
}
