/// A value that one task makes and others wait for: each ``value()`` asked before ``finish(_:)``
/// returns what was finished with, and each asked after returns it at once. Confined to the
/// actor that holds it (the daemon's): no lock.
final class Shared<Value: Sendable> {
    private var finished: Value?
    private var waiting: [CheckedContinuation<Value, Never>] = []

    /// Waits for the value (returns at once once there is one).
    func value(isolation: isolated (any Actor)? = #isolation) async -> Value {
        if let finished { return finished }
        return await withCheckedContinuation { waiting.append($0) }
    }

    /// Gives every waiter, and every later asker, `value`.
    func finish(_ value: Value) {
        finished = value
        waiting.forEach { $0.resume(returning: value) }
        waiting = []
    }
}
