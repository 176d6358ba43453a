public import Peripheral
import Synchronization

/// `EncryptionCounters` for tests: hands out 1, 2, 3, ... for each key (kept in memory),
/// counts the calls, and fails with a scripted error when asked to.
public final class MockCounters: EncryptionCounters {
    private struct State {
        var next: [BTHome.Key: UInt32] = [:]
        var calls = 0
        var failure: PeripheralError?
    }

    private let state = Mutex(State())

    /// Counters starting at 1 for every key.
    public init() {}

    /// Makes every later call fail with `error`, as a state directory that cannot be written does.
    public func fail(with error: PeripheralError) { state.withLock { $0.failure = error } }

    /// How many counters were asked for.
    public var nextCallCount: Int { state.withLock { $0.calls } }

    /// The next counter for `key` (1 first), or the scripted failure.
    public func next(for key: BTHome.Key) throws(PeripheralError) -> UInt32 {
        try state.withLock { state throws(PeripheralError) -> UInt32 in
            state.calls += 1
            if let failure = state.failure { throw failure }
            let counter = state.next[key, default: 1]
            state.next[key] = counter + 1
            return counter
        }
    }
}
