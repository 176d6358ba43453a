/// What the stack reports on one adapter against what the manager holds there: the self-check
/// that the domain runs after things settle (`PeripheralManaging.audit()`).
public struct RegistrationAudit: Hashable, Sendable {
    /// The adapter.
    public var adapter: String
    /// How many advertisements the stack has registered on it, from every program (BlueZ's
    /// `ActiveInstances`).
    public var registered: Int
    /// The advertisements this manager registered there and still tracks.
    public var held: Set<RegistrationID>
    /// Registrations of this manager's that nothing tracked any more (a reply that never came,
    /// an object left exported), which the audit unregistered from the stack.
    public var straysRemoved: Int

    /// An audit of one adapter.
    public init(adapter: String, registered: Int, held: Set<RegistrationID>, straysRemoved: Int = 0) {
        self.adapter = adapter
        self.registered = registered
        self.held = held
        self.straysRemoved = straysRemoved
    }
}
