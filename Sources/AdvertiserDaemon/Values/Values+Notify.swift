import AdvertiserConfig
import BluetoothModule
import DBus
import Logging
import Peripheral

extension Values {
    /// Notifies `central` alone of a value of one of service `name`'s characteristics
    /// (`bleadvctl set --central`), checked against its format as ``change(_:_:)`` checks it;
    /// the service's values stay as they are (reads and `status` give them). Not coalesced:
    /// each call is one notification. One characteristic a call, as CoreBluetooth's
    /// `updateValue(_:for:onSubscribedCentrals:)`: a refusal then never follows a notification
    /// already sent.
    /// - Throws: `invalidValue` for an address that is none, an advertisement, no value or more
    ///   than one, a value that does not fit, or a characteristic that does not notify;
    ///   `unknownName` for a service or a central not subscribed; `rejected` where BlueZ
    ///   notifies every subscriber alike.
    func notify(_ name: String, central: String, _ values: [String: DBusValue]) async throws(PeripheralError) {
        guard Bond.isAddress(central) else {
            throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(central)) is no central's address (AA:BB:CC:DD:EE:FF)")
        }
        guard let entry = services[name] else {
            if entries[name] != nil {
                throw PeripheralError(.invalidValue, "\(name) is an advertisement; a central alone is notified of a GATT service's characteristics")
            }
            throw PeripheralError.unknownName(name, kind: "service")
        }
        guard values.count == 1 else {
            throw PeripheralError(.invalidValue, "\(values.isEmpty ? "no value given" : "\(values.count) values given"); one central is notified of one characteristic a call, e.g. \(entry.live.service.characteristics.first?.name ?? "level")=80")
        }
        let changed = try applying(values, to: name)
        guard let characteristic = changed.service.characteristics.first(where: { values[$0.name] != nil }) else {
            throw PeripheralError(.unknownName, "\(name) has no characteristic \(PeripheralError.quoted(values.keys.first ?? ""))")
        }
        guard characteristic.flags.contains(.notify) else {
            throw PeripheralError(.invalidValue, "\(name).\(characteristic.name) does not notify (flags has no \"notify\")")
        }
        let (module, id) = (module, GATTCharacteristicID(service: name, characteristic: characteristic.name))
        try await PeripheralError.caught { try await module.notify(characteristic.value, of: id, to: central.uppercased()) }
        logger.info("\(name): notified \(central.uppercased()) alone of \(shown(values.keys, of: name, in: changed))")
    }
}
