public import Peripheral
import Synchronization

/// A `PairingDecider` for tests: answers every request as it was told to, and records what it
/// was asked and how often a request was called off.
public final class RecordingDecider: PairingDecider {
    private struct State {
        var asked: [PairingRequest] = []
        var cancelled = 0
    }

    private let answer: Bool
    private let state = Mutex(State())

    /// A decider that answers `answer` (true: the stack may go on) to every request.
    public init(_ answer: Bool) { self.answer = answer }

    /// The requests it was asked, in order.
    public var asked: [PairingRequest] { state.withLock { $0.asked } }

    /// How many times the stack called off the request it asked last.
    public var cancelCount: Int { state.withLock { $0.cancelled } }

    /// Records `request` and answers as told.
    public func decide(_ request: PairingRequest) async -> Bool {
        state.withLock { $0.asked.append(request) }
        return answer
    }

    /// Counts the call.
    public func cancel() async { state.withLock { $0.cancelled += 1 } }
}
