/// Registrations on an adapter: advertisements on air, the GATT application and the pairing agent; each changed in place, sent again, or put back when the stack dropped it, and the stack's holdings compared with them.
///
/// A capability of a Bluetooth stack (``PeripheralManaging``); the BlueZ manager and the mock
/// each conform to it in a file of its own.
public protocol RegistrationManaging: Sendable {
    /// Registers `subject` on an adapter; returns when the stack holds it (an advertisement on
    /// air, an application's services read, the agent answering). Registering the agent when
    /// this manager's agent is registered already returns its id.
    /// - Throws: ``PeripheralError`` with the stack's reason translated.
    func register(_ subject: RegistrationSubject, on adapter: String) async throws -> RegistrationID

    /// Unregisters what `id` names, whatever its kind: an advertisement leaves the air, an
    /// application's services are no longer found, the agent takes no new bonds. One the stack
    /// no longer holds counts as unregistered.
    /// - Throws: ``PeripheralError`` `notRegistered` for an identity this manager did not hand out.
    func unregister(_ id: RegistrationID) async throws

    /// Changes a registered advertisement in place, without taking it off air.
    func updateAdvertisement(_ id: RegistrationID, to advertisement: Advertisement) async throws

    /// Sends a registered advertisement to the controller again, unchanged. Without extended
    /// advertising the kernel shows an adapter's advertisements in turn from a timer, which a
    /// link ending as a turn ends can leave unarmed (the turns then stop on one advertisement);
    /// one sent again arms it. Otherwise nothing changes on air, or the advertisement on air
    /// begins its turn again.
    /// - Throws: ``PeripheralError`` `notRegistered` for an unknown advertisement.
    func refreshAdvertisement(_ id: RegistrationID) async throws

    /// Registers an advertisement again if BlueZ no longer holds it although it never said so.
    /// BlueZ 5.66 to 5.73 forget an advertisement whose in-place update the kernel refused,
    /// with no `Release`, no error and no signal: whatever was believed on air is then false.
    /// - Returns: true when BlueZ had dropped it and it is registered again; false when BlueZ
    ///   still held it (nothing changed).
    /// - Throws: ``PeripheralError`` when BlueZ could not be asked, or refused the registration.
    func reregisterIfDropped(_ id: RegistrationID) async throws -> Bool

    /// Compares what the stack holds with what this manager registered, adapter by adapter,
    /// and removes what it can name that nothing tracks any more (objects left exported,
    /// registrations whose unregistering got no answer).
    /// - Throws: ``PeripheralError`` when the stack cannot be asked.
    func audit() async throws -> [RegistrationAudit]
}
