/// A registered GATT application's values: changed in place (subscribed centrals notified), and reads answered when a central asks.
///
/// A capability of a Bluetooth stack (``PeripheralManaging``); the BlueZ manager and the mock
/// each conform to it in a file of its own.
public protocol GATTServing: Sendable {
    /// Changes a characteristic's value in place; subscribed centrals are notified (or
    /// indicated) of it: all of them, or the `central` (its address) alone.
    /// - Throws: ``PeripheralError`` `notRegistered` for an unknown application or
    ///   characteristic; `unknownName` when `central` is not subscribed; `rejected` when the
    ///   stack cannot notify one central alone (BlueZ before 5.71, a characteristic that indicates).
    func updateValue(_ value: [UInt8], of characteristic: GATTCharacteristicID, in application: RegistrationID, to central: String?) async throws
}
