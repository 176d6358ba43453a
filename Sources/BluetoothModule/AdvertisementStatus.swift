public import Peripheral

/// What the module knows about one named advertisement.
public struct AdvertisementStatus<Instant: InstantProtocol & Sendable>: Sendable, Hashable {
    /// Where an advertisement is: one phase at a time, each with what only it needs.
    public enum Phase: Sendable, Hashable {
        /// Not on air, and not meant to be.
        case off
        /// Registered with BlueZ under this identity, on this adapter.
        case on(AdvertisementID, adapter: String)
        /// A transient failure; the next attempt is at that instant. `failures` counts the
        /// attempts that failed in a row (the backoff grows with it).
        case retrying(at: Instant, failures: Int)
        /// Waiting for BlueZ or for an adapter that can advertise; an event brings it back.
        case waiting
        /// Refused for good (e.g. BlueZ could not parse it); waits for a new `on`.
        case failed(PeripheralError)
    }

    /// Whether it should be on air.
    public var desired: Bool
    /// What is on air, or why not.
    public var phase: Phase
    /// The last error, kept until the next success.
    public var lastError: PeripheralError?
    /// When `phase` last changed.
    public var since: Instant
    /// The fields BlueZ accepted at the last registration but does not act on, named as in the
    /// config file (`Advertisement.fieldsIgnored(on:)`).
    public var ignored: [String] = []
    /// What the last audit found on its adapter and could not repair, while it is on air there
    /// (``BluetoothModule/discrepancies()``); nil when BlueZ agrees.
    public var mismatch: String?

    /// A status.
    public init(desired: Bool, phase: Phase, lastError: PeripheralError? = nil, since: Instant) {
        self.desired = desired
        self.phase = phase
        self.lastError = lastError
        self.since = since
    }
}

/// What the module knows about the GATT application.
public struct ApplicationStatus<Instant: InstantProtocol & Sendable>: Sendable, Hashable {
    /// Where the application is.
    public enum Phase: Sendable, Hashable {
        /// No application is configured.
        case off
        /// Registered with BlueZ under this identity, on this adapter.
        case registered(ApplicationID, adapter: String)
        /// A transient failure; the next attempt is at that instant.
        case retrying(at: Instant, failures: Int)
        /// Waiting for BlueZ or for an adapter; an event brings it back.
        case waiting
        /// Refused for good (BlueZ could not parse it); waits for a new configuration.
        case failed(PeripheralError)
    }

    /// Where the application is.
    public var phase: Phase
    /// The last error, kept until the next success.
    public var lastError: PeripheralError?
    /// When `phase` last changed.
    public var since: Instant

    /// A status.
    public init(phase: Phase, lastError: PeripheralError? = nil, since: Instant) {
        self.phase = phase
        self.lastError = lastError
        self.since = since
    }
}
