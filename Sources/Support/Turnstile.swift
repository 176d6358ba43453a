internal import Synchronization

/// One at a time, in the order asked: the module's operations, the daemon's reloads. A caller
/// passes once the one before it left; a task cancelled while it waits leaves the line with a
/// `CancellationError` and lets no one else through.
///
/// ```swift
/// try await turnstile.enter()
/// defer { turnstile.leave() }
/// ```
/// Its state is behind a lock (a cancelled waiter is taken out from the canceller's thread),
/// held only to change a few values; no thread is started and nothing is polled.
public final class Turnstile: Sendable {
    private struct State {
        var busy = false
        var waiting: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        /// Waiters cancelled before they were in line: they leave as soon as they get there.
        var cancelled: Set<Int> = []
        var next = 0
    }

    private let state = Mutex(State())

    /// A free turnstile.
    public init() {}

    /// Whether someone is through and has not left yet.
    public var isBusy: Bool { state.withLock { $0.busy } }

    /// How many wait in line.
    public var waiting: Int { state.withLock { $0.waiting.count } }

    /// Returns once it is this caller's turn (at once when no one is through).
    /// - Throws: `CancellationError` when the task is cancelled before its turn came; it is
    ///   not through then, and must not ``leave()``.
    public func enter(isolation: isolated (any Actor)? = #isolation) async throws {
        let id: Int? = state.withLock { state in
            guard state.busy else {
                state.busy = true
                return nil
            }
            defer { state.next += 1 }
            return state.next
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case cancelled, through, inLine }
                let outcome = state.withLock { state -> Outcome in
                    guard state.cancelled.remove(id) == nil else { return .cancelled }
                    // The one through may have left since this caller found it busy, with no
                    // one in line to let through: the turnstile is free, and this caller's.
                    guard state.busy else {
                        state.busy = true
                        return .through
                    }
                    state.waiting.append((id, continuation))
                    return .inLine
                }
                switch outcome {
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .through: continuation.resume()
                case .inLine: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else {
                    // Not in line yet (or through already: then this is never read).
                    state.cancelled.insert(id)
                    return nil
                }
                return state.waiting.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
        // Through: a mark left by a cancellation that came too late is dropped.
        state.withLock { _ = $0.cancelled.remove(id) }
    }

    /// Lets the next one in line through, or leaves the turnstile free.
    public func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst().continuation
        }
        next?.resume()
    }
}
