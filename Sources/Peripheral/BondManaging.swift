/// The bonds centrals made with an adapter, and whether it takes new ones.
///
/// A capability of a Bluetooth stack (``PeripheralManaging``); the BlueZ manager and the mock
/// each conform to it in a file of its own.
public protocol BondManaging: Sendable {
    /// Whether the adapter takes new bonds (BlueZ's `Pairable`); bonds made already keep working.
    func setPairable(_ pairable: Bool, adapter: String) async throws

    /// The centrals bonded with the adapter, by address.
    func bonds(adapter: String) async throws -> [Bond]

    /// Removes the bond with `central` (and the stack's record of it).
    /// - Throws: ``PeripheralError`` `unknownName` when the adapter has no such central.
    func removeBond(_ central: String, adapter: String) async throws
}
