public import Peripheral

/// The mock's ``BondManaging``: each call recorded, answered as scripted.
extension MockPeripheralManager: BondManaging {
    /// Records the call; answers as ``scriptSetPairable(_:)`` says.
    public func setPairable(_ pairable: Bool, adapter: String) async throws {
        try await answer("setPairable(\(pairable), adapter: \(adapter))", \.setPairable) { $0.pairable.append((pairable, adapter)) }
    }

    /// Records the call; answers as ``scriptBonds(_:)`` says.
    public func bonds(adapter: String) async throws -> [Bond] {
        try await answer("bonds(adapter: \(adapter))", \.bonds) { $0.bondQueries.append(adapter) }
    }

    /// Records the call; answers as ``scriptRemoveBond(_:)`` says.
    public func removeBond(_ central: String, adapter: String) async throws {
        try await answer("removeBond(\(central), adapter: \(adapter))", \.removeBond) { $0.removedBonds.append((central, adapter)) }
    }
}
