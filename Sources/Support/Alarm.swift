/// The instant one timer is armed for: so that a timer is started only for an instant none is
/// armed for, however often the next instant is worked out, and a timer that fires late (one
/// replaced since) is told from the one armed.
///
/// It holds no task and no clock: its owner starts the timer (a task sleeping until the
/// instant) when ``arm(_:)`` says so, and calls ``fired(_:)`` when it wakes. The retry and
/// audit timer of the Bluetooth module, the pairing window's and Improv's partial frames' work
/// this way.
public struct Alarm<Instant: Equatable & Sendable>: Equatable, Sendable {
    /// The instant armed for; nil when none is.
    public private(set) var at: Instant?

    /// Not armed.
    public init() {}

    /// Arms it for `instant` (nil disarms it): true when that is a change, and so a timer is to
    /// be started for `instant` (and the one armed before, where it can be, cancelled).
    public mutating func arm(_ instant: Instant?) -> Bool {
        guard instant != at else { return false }
        at = instant
        return true
    }

    /// The timer started for `instant` fired: disarms it when `instant` is the one armed, and
    /// says whether it was (false: a timer replaced since).
    @discardableResult
    public mutating func fired(_ instant: Instant) -> Bool {
        guard at == instant else { return false }
        at = nil
        return true
    }
}
