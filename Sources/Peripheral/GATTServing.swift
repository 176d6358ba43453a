/// A registered GATT application's values: changed in place (subscribed centrals notified), and reads answered when a central asks.
///
/// A capability of a Bluetooth stack (``PeripheralManaging``); the BlueZ manager and the mock
/// each conform to it in a file of its own.
public protocol GATTServing: Sendable {
    /// Changes a characteristic's value in place; subscribed centrals are notified (or
    /// indicated) of it.
    /// - Throws: ``PeripheralError`` `notRegistered` for an unknown application or characteristic.
    func updateValue(_ value: [UInt8], of characteristic: GATTCharacteristicID, in application: RegistrationID) async throws
}
