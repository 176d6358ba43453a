package import Peripheral

/// Improv's part in the daemon: the control API's `improv authorize`, routed to the provisioner
/// (``ImprovProvisioner``; it shows itself through the ``Stage``, takes BlueZ's events by its
/// ``ImprovProvisioner/delivery(of:)``, and joins through the bus's joiners,
/// ``ControlBus/joiner(for:clock:)``, unless one is injected).
extension Daemon {
    /// `bleadvctl improv authorize [ADDRESS]`: a person allows one connected central to
    /// provision for the configured time.
    package func improvAuthorize(_ central: String) async throws(PeripheralError) -> (seconds: Int, central: String) {
        try await improv.authorize(central)
    }
}
