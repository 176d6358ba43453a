import Synchronization

/// A clock that moves only when the test moves it, for code with retries and timeouts.
/// `sleep` returns at once when the deadline has passed and otherwise waits until
/// ``advance(by:)`` passes it.
public final class ManualClock: Clock, Sendable {
    /// A point on the manual clock.
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock started.
        public var offset: Duration

        /// The instant `offset` after the clock started.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The duration from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Orders instants.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let id: Int
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private let state = Mutex((now: Instant(offset: .zero), sleepers: [Sleeper](), nextID: 0))

    /// A clock at zero.
    public init() {}

    /// The current instant.
    public var now: Instant { state.withLock { $0.now } }
    /// The smallest step the clock takes.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Moves the clock forward, waking the sleepers whose deadline passed.
    public func advance(by duration: Duration) {
        let due: [Sleeper] = state.withLock { state in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Waits until the clock reaches `deadline`.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        // Like the real clocks: a cancelled sleep ends at once with CancellationError.
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state in
                    if deadline <= state.now || Task.isCancelled { return true }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let cancelled = state.withLock { state in
                let found = state.sleepers.first { $0.id == id }
                state.sleepers.removeAll { $0.id == id }
                return found
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }
}
