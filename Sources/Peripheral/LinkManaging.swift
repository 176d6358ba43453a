/// The links centrals made with an adapter.
///
/// A capability of a Bluetooth stack (``PeripheralManaging``); the BlueZ manager and the mock
/// each conform to it in a file of its own.
public protocol LinkManaging: Sendable {
    /// Ends the link with `central` on the adapter (BlueZ's `Device1.Disconnect`).
    /// - Throws: ``PeripheralError`` `unknownName` when no such central is known to the adapter.
    func disconnect(_ central: String, adapter: String) async throws
    /// The notifications each central's link dropped (by address): values a later one replaced
    /// while the central's notification socket was full. Empty where the stack gives none.
    func notificationsDropped() async -> [String: Int]
}
