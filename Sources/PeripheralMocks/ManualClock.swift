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

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        var nextID = 0
        /// Tests waiting for a number of sleepers (``waitForSleepers(_:)``).
        var watchers: [Watcher] = []

        mutating func makeID() -> Int {
            nextID += 1
            return nextID
        }

        /// Takes out the watchers whose number of sleepers is reached.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            let count = sleepers.count
            defer { watchers.removeAll { $0.count <= count } }
            return watchers.filter { $0.count <= count }.map(\.continuation)
        }
    }

    private struct Watcher {
        let id: Int
        let count: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    private let state = Mutex(State())

    /// A clock at zero.
    public init() {}

    /// The current instant.
    public var now: Instant { state.withLock { $0.now } }
    /// The deadlines of the tasks asleep on the clock now, soonest first: a test waits for the
    /// one it means to pass, not for any sleeper.
    public var deadlines: [Instant] { state.withLock { $0.sleepers.map(\.deadline).sorted() } }
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

    /// Returns once `count` tasks are asleep on the clock, so that a test advances it past
    /// deadlines that exist rather than before they are set; or when the task is cancelled
    /// (a test's time limit), so that a test whose sleeper never comes ends.
    public func waitForSleepers(_ count: Int = 1) async {
        let id = state.withLock { $0.makeID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state in
                    guard state.sleepers.count < count, !Task.isCancelled else { return true }
                    state.watchers.append(Watcher(id: id, count: count, continuation: continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let cancelled = state.withLock { state in
                let found = state.watchers.first { $0.id == id }
                state.watchers.removeAll { $0.id == id }
                return found
            }
            cancelled?.continuation.resume()
        }
    }

    /// Waits until the clock reaches `deadline`.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        // Like the real clocks: a cancelled sleep ends at once with CancellationError.
        let id = state.withLock { $0.makeID() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let (ready, watchers) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if deadline <= state.now || Task.isCancelled { return (true, []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (false, state.satisfiedWatchers())
                }
                if ready { continuation.resume() }
                for watcher in watchers { watcher.resume() }
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
