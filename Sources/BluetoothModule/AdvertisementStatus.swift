public import Peripheral

/// What the module knows about one named advertisement.
public struct AdvertisementStatus<Instant: InstantProtocol & Sendable>: Sendable, Hashable {
    /// What is on air, or why not.
    public enum Actual: Sendable, Hashable {
        /// Not on air, and not meant to be.
        case off
        /// Registered with BlueZ under this identity.
        case on(AdvertisementID)
        /// A transient failure; the next attempt is at that instant.
        case retrying(at: Instant)
        /// Waiting for BlueZ or for an adapter that can advertise.
        case waiting
        /// Refused for good (e.g. BlueZ could not parse it); fix the advertisement.
        case failed
    }

    /// Whether it should be on air.
    public var desired: Bool
    /// What is on air.
    public var actual: Actual
    /// The last error, kept until the next success.
    public var lastError: PeripheralError?
    /// When `actual` last changed.
    public var since: Instant

    /// Whether it is on air now.
    public var isOnAir: Bool {
        if case .on = actual { true } else { false }
    }
}
