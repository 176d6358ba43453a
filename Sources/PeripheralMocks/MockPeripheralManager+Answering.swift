public import Peripheral
import Synchronization

/// The mock's ``StackAnswering``: what the test set, asked of no one.
extension MockPeripheralManager: StackAnswering {
    /// What ``scriptUnanswered(_:)`` set: nil (a stack that answers) unless told. Not a call.
    public func unanswered() async -> UnansweredCall? {
        state.withLock { $0.unanswered }
    }
}
