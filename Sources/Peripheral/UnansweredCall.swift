import Glibc

/// A call to the stack that has not been answered yet. The oldest of them says since when the
/// stack has been silent: what bleadvd knows is then as old as that, and a control call that
/// needs the stack waits.
public struct UnansweredCall: Hashable, Sendable {
    /// The call, as the stack names it (`UnregisterAdvertisement`). Not the object it went
    /// to: a device's path names a central, which is the owner's business.
    public var call: String
    /// When it was sent, by the wall clock: seconds since the Unix epoch.
    public var sentAt: Double
    /// How long it has waited.
    public var waited: Duration

    /// How long a call waits before it counts as unanswered: less than a control call waits
    /// for the stack (0.8 s in bleadvd) before it answers from what bleadvd knows, so that such
    /// an answer is always said to be.
    public static let countedAfter: Duration = .milliseconds(500)

    /// A call sent at `sentAt` that has waited `waited`.
    public init(call: String, sentAt: Double, waited: Duration) {
        self.call = call
        self.sentAt = sentAt
        self.waited = waited
    }
}

/// The wall clock, for what a person reads beside the journal's times: ``UnansweredCall``'s
/// `sentAt`, and its time of day.
public enum WallClock {
    /// Seconds since the Unix epoch (`CLOCK_REALTIME`).
    public static var now: Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// `seconds` (since the epoch) as the local time of day, `HH:MM:SS`.
    public static func time(of seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return "?" }
        var whole = time_t(seconds.rounded(.down))
        var parts = tm()
        guard localtime_r(&whole, &parts) != nil else { return "?" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }
}
