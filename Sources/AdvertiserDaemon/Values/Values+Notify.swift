import AdvertiserConfig
import BluetoothModule
import DBus
import Logging
import Peripheral

extension Values {
    /// Notifies `central` alone of `values` of service `name`'s characteristics (`bleadvctl set
    /// --central`), each checked against its format as ``change(_:_:)`` checks it; the
    /// service's values stay as they are (reads and `status` give them). Not coalesced: each
    /// call is one notification per characteristic.
    /// - Throws: `invalidValue` for an address that is none, an advertisement, a value that
    ///   does not fit, or a characteristic that does not notify; `unknownName` for a service or
    ///   a central not subscribed; `rejected` where BlueZ notifies every subscriber alike.
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
        guard !values.isEmpty else {
            throw PeripheralError(.invalidValue, "no values given; give at least one, e.g. \(entry.live.service.characteristics.first?.name ?? "level")=80")
        }
        var changes: [String: ConfigValue] = [:]
        for (key, value) in values {
            if case .string(let text) = value {
                changes[key] = .string(text)
            } else {
                changes[key] = try Self.configValue(value, key: key, like: nil)
            }
        }
        let changed: ConfiguredService
        do {
            changed = try entry.live.applying(changes, name: name)
        } catch {
            throw PeripheralError(.invalidValue, error.description)
        }
        let notified = changed.service.characteristics.filter { changes[$0.name] != nil }
        if let silent = notified.first(where: { !$0.flags.contains(.notify) }) {
            throw PeripheralError(.invalidValue, "\(name).\(silent.name) does not notify (flags has no \"notify\")")
        }
        for characteristic in notified.sorted(by: { $0.name < $1.name }) {
            let id = GATTCharacteristicID(service: name, characteristic: characteristic.name)
            do {
                try await module.notify(characteristic.value, of: id, to: central.uppercased())
            } catch let error as PeripheralError {
                throw error
            } catch {
                throw PeripheralError(.failed, "\(error)")
            }
        }
        let shown = notified.map(\.name).sorted().map { key in
            entry.live.isSecured(key) ? "\(key)=(secured: not shown)" : "\(key)=\(Untrusted.shown(changed.values[key]?.description ?? "", limit: 64))"
        }
        logger.info("\(name): notified \(central.uppercased()) alone of \(shown.joined(separator: " "))")
    }
}
