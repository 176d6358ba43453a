public import Peripheral

/// The mock's ``LinkManaging``: each call recorded, answered as scripted.
extension MockPeripheralManager: LinkManaging {
    /// Records the call; answers as ``scriptDisconnect(_:)`` says.
    public func disconnect(_ central: String, adapter: String) async throws {
        try await answer("disconnect(\(central), adapter: \(adapter))", \.disconnect) { $0.disconnected.append((central, adapter)) }
    }
}
