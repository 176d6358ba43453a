/// How long to wait before trying a transient failure again: exponential backoff with a cap.
public struct RetryPolicy: Hashable, Sendable {
    /// The wait after the first failure.
    public var initial: Duration
    /// The factor each further failure multiplies the wait by.
    public var multiplier: Int
    /// The longest wait.
    public var maximum: Duration
    /// The longest wait for a free advertising slot.
    public var slotMaximum: Duration

    /// 1 s, 2 s, then every 4 s: what a controller refused for a while (Command Disallowed,
    /// Memory Capacity Exceeded, a command it left unanswered) is back on air within 5 s of its
    /// taking it again (scenario 77 on Bumble's controllers). A try costs one call to bluetoothd
    /// and a few HCI commands; the module says so at first and then once a minute. No free slot
    /// doubles on to 60 s: another program holding the slots is no fault of the controller's, a
    /// slot the module frees wakes the waiting at once, and any local user may take slots (a
    /// try every 4 s for as long as one holds them was 900 calls to bluetoothd an hour).
    public static let standard = RetryPolicy(initial: .seconds(1), multiplier: 2, maximum: .seconds(4), slotMaximum: .seconds(60))

    /// A policy.
    public init(initial: Duration, multiplier: Int, maximum: Duration, slotMaximum: Duration? = nil) {
        self.initial = initial
        self.multiplier = multiplier
        self.maximum = maximum
        self.slotMaximum = slotMaximum ?? maximum
    }

    /// The wait after `failures` consecutive failures (1 for the first); `waitingForSlot` when
    /// they found no free advertising slot.
    public func delay(afterFailures failures: Int, waitingForSlot: Bool = false) -> Duration {
        let maximum = waitingForSlot ? slotMaximum : maximum
        var delay = initial
        for _ in 1..<max(failures, 1) {
            delay *= multiplier
            if delay >= maximum { return maximum }
        }
        return min(delay, maximum)
    }
}
