import AdvertiserConfig
import BluetoothModule
import Peripheral

/// Values as the events component's port: an event goes into a BTHome sensor's packets at once,
/// with the values in force, as the component's share of them (``PacketShare``).
extension Values: EventShowing {
    /// Whose share of the packets an event is.
    static var eventOwner: String { "bthome-event" }

    func sensor(_ name: String) async throws(PeripheralError) -> EventTarget {
        guard let configured = configured(name) else { throw PeripheralError.unknownName(name) }
        guard let sensor = configured.bthome else {
            throw PeripheralError(.invalidValue, "\(name) is not a BTHome sensor: only a sensor's packets carry events")
        }
        guard sensor.buttons + sensor.dimmers > 0 else {
            throw PeripheralError(.invalidValue, "\(name) has no buttons or dimmers; declare them in its [advertisement.\(name).bthome] table, e.g. buttons = 1")
        }
        guard await status(of: name)?.desired == true else {
            throw PeripheralError(.invalidValue, "\(name) is off: an event would reach no one; bleadvctl on \(name) first")
        }
        return EventTarget(sensor: sensor, burst: sensor.eventBurst, encrypted: configured.isEncrypted)
    }

    func show(event: BTHome.Event?, in name: String) async throws(PeripheralError) {
        // One packet id for the whole burst, and a new one after it.
        let share = event.map { event in PacketShare(holds: true) { $0.bthome?.event = event } }
        try await show(share, of: Self.eventOwner, in: name, newPacket: true)
    }
}
