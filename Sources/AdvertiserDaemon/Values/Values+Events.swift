import AdvertiserConfig
import BluetoothModule
import Peripheral

/// Values as the events component's port: an event goes into a BTHome sensor's packets at once,
/// with the values in force.
extension Values: EventShowing {
    func sensor(_ name: String) async throws(PeripheralError) -> EventTarget {
        guard let entry = entries[name] else { throw PeripheralError.unknownName(name) }
        guard let sensor = entry.values.live.bthome else {
            throw PeripheralError(.invalidValue, "\(name) is not a BTHome sensor: only a sensor's packets carry events")
        }
        guard sensor.buttons + sensor.dimmers > 0 else {
            throw PeripheralError(.invalidValue, "\(name) has no buttons or dimmers; declare them in its [advertisement.\(name).bthome] table, e.g. buttons = 1")
        }
        guard await module.status()[.advertisement(name)]?.desired == true else {
            throw PeripheralError(.invalidValue, "\(name) is off: an event would reach no one; bleadvctl on \(name) first")
        }
        return EventTarget(sensor: sensor, burst: sensor.eventBurst, encrypted: entry.values.live.isEncrypted)
    }

    func show(event: BTHome.Event?, in name: String) async throws(PeripheralError) {
        guard entries[name] != nil else { throw PeripheralError.unknownName(name) }
        entries[name]!.event = event
        entries[name]!.packetID &+= 1
        // The packet carries the values in force too: a sender running has nothing left to send.
        entries[name]!.values.markSent()
        do {
            try await module.update(name, to: entries[name]!.advertisement)
        } catch let error as PeripheralError {
            throw error
        } catch {
            throw PeripheralError(.failed, "\(error)")
        }
        if event == nil {
            await announcer?.announceValues(name, all: values(of: name), everyone: values(of: name, public: true))
        }
    }
}
