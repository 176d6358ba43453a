public import Peripheral
import Synchronization

/// The mock's ``GATTServing``: each call recorded, answered as scripted.
extension MockPeripheralManager: GATTServing {
    /// Records the call; answers as ``scriptUpdateValue(_:)`` says.
    public func updateValue(_ value: [UInt8], of characteristic: GATTCharacteristicID, in application: RegistrationID, to central: String?) async throws {
        try await answer("updateValue(_:of: \(characteristic))", \.updateValue) {
            $0.updatedValues.append((value, characteristic, application))
            $0.notifiedCentrals.append(central)
        }
    }
}
