public import Peripheral

/// What the module knows of the stack below it, from the events in the order they came: whether
/// BlueZ is on the bus and which run of it (`StackGeneration`), and which adapters it last
/// reported powered off. It decides whether a registration may be tried now, and keeps the
/// adapter registrations go to until the stack changes; the module keeps no other flag about
/// the stack.
///
/// - BlueZ *absent* (it vanished and no run has appeared since): nothing is tried; the next
///   run's appearance brings everything back.
/// - An adapter *settling* (reported off less than ``BluetoothModule/powerOffSettle`` ago, or
///   found changing its power when the module asked to power it on): nothing is tried on it,
///   nor on an adapter yet to be chosen. bluetoothd powers every adapter off as it stops, and a
///   registration or a power-on sent then only races its shutdown; it powers them on as it
///   starts, and a power-on sent then is refused as busy. Its Powered event ends the settling;
///   when the time is up without one and BlueZ is still there, the adapter is treated as any
///   adapter found off.
public struct StackView<Instant: InstantProtocol & Sendable>: Sendable, Hashable {
    /// Whether BlueZ is there.
    public enum BlueZ: Sendable, Hashable {
        /// No event said otherwise since the module started: calls find out.
        case assumedPresent
        /// This run of bluetoothd appeared.
        case present(StackGeneration)
        /// The run that was there vanished, and none has appeared since.
        case absent
    }

    /// Whether BlueZ is there.
    public private(set) var bluez: BlueZ = .assumedPresent
    /// An adapter settling: why, and the instant until which nothing is tried on it.
    public struct Settling: Sendable, Hashable {
        /// Why an adapter settles.
        public enum Cause: Sendable, Hashable {
            /// It was reported powered off.
            case poweredOff
            /// BlueZ was changing its power when the module asked to power it on.
            case changingPower
        }

        /// Until when nothing is tried on it.
        public var until: Instant
        /// Why.
        public var cause: Cause
    }

    /// The adapters settling, by name.
    public private(set) var settling: [String: Settling] = [:]
    /// How many power-ons in a row BlueZ refused as busy, by adapter; its Powered event, or
    /// another run of bluetoothd, starts the count again.
    public private(set) var busyRefusals: [String: Int] = [:]

    /// The adapter registrations go to, as the last registration chose it; nil when it is to
    /// be chosen again. Every change of the stack this view is told of (BlueZ or an adapter
    /// coming, going or changing its power, an adapter that settled) forgets it, here and
    /// nowhere else.
    public private(set) var adapterInUse: AdapterCapabilities?

    /// A view that knows nothing yet.
    public init() {}

    /// Registrations go to `adapter` until the stack changes.
    mutating func use(_ adapter: AdapterCapabilities) {
        adapterInUse = adapter
    }

    /// BlueZ or an adapter changed in a way the rest of the view does not follow (an adapter
    /// added or removed, a registration that found no adapter or no BlueZ): the adapter is
    /// chosen again at the next registration.
    mutating func changed() {
        adapterInUse = nil
    }

    /// A run of bluetoothd appeared: every adapter is as that run reports it.
    mutating func appeared(_ generation: StackGeneration) {
        adapterInUse = nil
        bluez = .present(generation)
        settling = [:]
        busyRefusals = [:]
    }

    /// A run vanished. Returns whether it was the one there (an older run's vanishing changes
    /// nothing about the present one).
    @discardableResult
    mutating func vanished(_ generation: StackGeneration) -> Bool {
        adapterInUse = nil
        switch bluez {
        case .present(let current) where current != generation: return false
        case .present, .assumedPresent, .absent:
            bluez = .absent
            settling = [:]
            busyRefusals = [:]
            return true
        }
    }

    /// An adapter was reported powered off, or on.
    mutating func powered(_ adapter: String, _ on: Bool, settleUntil: Instant) {
        adapterInUse = nil
        settling[adapter] = on ? nil : Settling(until: settleUntil, cause: .poweredOff)
        busyRefusals[adapter] = nil
    }

    /// BlueZ refused to power an adapter on because it is changing its power already: it
    /// settles until `settle(refusals)` from `now`, `refusals` counting this one.
    mutating func changingPower(_ adapter: String, now: Instant, settle: (_ refusals: Int) -> Instant.Duration) {
        let refusals = (busyRefusals[adapter] ?? 0) + 1
        busyRefusals[adapter] = refusals
        settling[adapter] = Settling(until: now.advanced(by: settle(refusals)), cause: .changingPower)
    }

    /// The adapters whose time to settle is up at `now`, which are no longer held back.
    mutating func settled(at now: Instant) -> [String] {
        let done = settling.filter { $0.value.until <= now }.keys.sorted()
        for adapter in done { settling[adapter] = nil }
        if !done.isEmpty { adapterInUse = nil }
        return done
    }

    /// The earliest instant an adapter's time to settle is up, if any.
    var nextSettle: Instant? { settling.values.map(\.until).min() }

    /// Why nothing may be registered now on `adapter` (nil: one yet to be chosen, which any
    /// adapter settling holds back); nil when it may be tried.
    func refusal(on adapter: String?) -> PeripheralError? {
        if bluez == .absent {
            return PeripheralError(.bluezUnavailable, "bluetoothd is not running (no org.bluez on the system bus)")
        }
        let held: String? = if let adapter { settling[adapter] == nil ? nil : adapter } else { settling.keys.min() }
        guard let held, let cause = settling[held]?.cause else { return nil }
        return switch cause {
        case .poweredOff:
            PeripheralError(.notPowered, "adapter \(held) was just powered off (as bluetoothd does when it stops); waiting for it to settle")
        case .changingPower:
            PeripheralError(.notPowered, "adapter \(held) is being powered on or off by BlueZ already (as bluetoothd does when it starts); waiting for it")
        }
    }
}
