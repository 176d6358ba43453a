public import Peripheral

/// What the module knows of the stack below it, from the events in the order they came: whether
/// BlueZ is on the bus and which run of it (`StackGeneration`), and which adapters it last
/// reported powered off. It decides whether a registration may be tried now; the module keeps
/// no other flag about the stack.
///
/// - BlueZ *absent* (it vanished and no run has appeared since): nothing is tried; the next
///   run's appearance brings everything back.
/// - An adapter *powering down* (reported off less than ``BluetoothModule/powerOffSettle``
///   ago): nothing is tried on it, nor on an adapter yet to be chosen. bluetoothd powers every
///   adapter off as it stops, and a registration or a power-on sent then only races its
///   shutdown. When the time is up and BlueZ is still there, the adapter is treated as any
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
    /// The adapters reported powered off, each with the instant until which nothing is tried
    /// on it.
    public private(set) var poweringDown: [String: Instant] = [:]

    /// A view that knows nothing yet.
    public init() {}

    /// A run of bluetoothd appeared: every adapter is as that run reports it.
    mutating func appeared(_ generation: StackGeneration) {
        bluez = .present(generation)
        poweringDown = [:]
    }

    /// A run vanished. Returns whether it was the one there (an older run's vanishing changes
    /// nothing about the present one).
    @discardableResult
    mutating func vanished(_ generation: StackGeneration) -> Bool {
        switch bluez {
        case .present(let current) where current != generation: return false
        case .present, .assumedPresent, .absent:
            bluez = .absent
            poweringDown = [:]
            return true
        }
    }

    /// An adapter was reported powered off, or on.
    mutating func powered(_ adapter: String, _ on: Bool, settleUntil: Instant) {
        poweringDown[adapter] = on ? nil : settleUntil
    }

    /// The adapters whose time to settle is up at `now`, which are no longer held back.
    mutating func settled(at now: Instant) -> [String] {
        let done = poweringDown.filter { $0.value <= now }.keys.sorted()
        for adapter in done { poweringDown[adapter] = nil }
        return done
    }

    /// The earliest instant an adapter's time to settle is up, if any.
    var nextSettle: Instant? { poweringDown.values.min() }

    /// Why nothing may be registered now on `adapter` (nil: one yet to be chosen, which any
    /// adapter powering down holds back); nil when it may be tried.
    func refusal(on adapter: String?) -> PeripheralError? {
        if bluez == .absent {
            return PeripheralError(.bluezUnavailable, "bluetoothd is not running (no org.bluez on the system bus)")
        }
        let down: String? = if let adapter { poweringDown[adapter] == nil ? nil : adapter } else { poweringDown.keys.min() }
        if let down {
            return PeripheralError(.notPowered, "adapter \(down) was just powered off (as bluetoothd does when it stops); waiting for it to settle")
        }
        return nil
    }
}
