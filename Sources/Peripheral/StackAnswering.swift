/// Whether the stack answers: the calls sent to it and not answered yet.
///
/// A capability of a Bluetooth stack (``PeripheralManaging``); the BlueZ manager and the mock
/// each conform to it in a file of its own.
public protocol StackAnswering: Sendable {
    /// The oldest call to the stack that has waited half a second or more for its answer, and
    /// is still waiting; nil while the stack answers. Asks nothing of the stack.
    func unanswered() async -> UnansweredCall?
}
