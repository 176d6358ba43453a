/// The continuous clock, with sleeps on an ``EventLoop``'s timers instead of Swift's global
/// executor (whose timers start a thread of libdispatch's pool).
///
/// A sleeping task is resumed by the loop when its deadline passes, or at once when it is
/// cancelled; it goes on on its own executor.
public struct LoopClock: Clock {
    /// The continuous clock's instants.
    public typealias Instant = ContinuousClock.Instant

    /// The loop whose timers wake sleepers.
    public let eventLoop: EventLoop

    /// A clock whose sleeps are timers of `eventLoop`.
    public init(on eventLoop: EventLoop) {
        self.eventLoop = eventLoop
    }

    /// The continuous clock's now.
    public var now: Instant { ContinuousClock.now }

    /// The loop's timers are as precise as the kernel's timerfd.
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    /// Sleeps until `deadline`, on the loop's timer.
    /// - Throws: `CancellationError` when the task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                eventLoop.execute { [eventLoop] in
                    guard !sleeper.cancelled else {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    sleeper.continuation = continuation
                    sleeper.timer = eventLoop.schedule(at: deadline) {
                        sleeper.continuation = nil
                        continuation.resume()
                    }
                }
            }
        } onCancel: {
            eventLoop.execute { [eventLoop] in
                sleeper.cancelled = true
                if let timer = sleeper.timer { eventLoop.cancel(timer) }
                sleeper.continuation?.resume(throwing: CancellationError())
                sleeper.continuation = nil
            }
        }
    }
}

/// One sleep's state, touched on the loop's thread only.
private final class Sleeper: @unchecked Sendable {
    var cancelled = false
    var timer: EventLoop.Timer?
    var continuation: CheckedContinuation<Void, any Error>?
}
