public import Peripheral

/// Where an event stands once it was taken: how many wait before it, and how long each is on air.
public struct EventQueued: Hashable, Sendable {
    /// The events before it (the one on air included): 0 when it went on air at once.
    public var ahead: Int
    /// How long each event's packets stay on air, in seconds.
    public var burstSeconds: Double

    /// A place.
    public init(ahead: Int, burstSeconds: Double) {
        self.ahead = ahead
        self.burstSeconds = burstSeconds
    }
}

/// The control API's events part, which the events component serves.
public protocol EventsControl: Sendable {
    /// Sends an event of BTHome sensor `name` (`button=long_press`, `button.2=press`, `dimmer=-3`).
    /// - Throws: `unknownName`; `invalidValue` for an event the sensor cannot send, one that is
    ///   off, or one with too many waiting.
    func event(_ name: String, _ given: [String: String]) async throws(PeripheralError) -> EventQueued
}
