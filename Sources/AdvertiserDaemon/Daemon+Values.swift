import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import DBus
import Logging
import Peripheral

extension Daemon {
    /// What `name` stands for.
    /// - Throws: `PeripheralError` `unknownName` when it is neither an advertisement nor a service.
    func target(_ name: String) throws(PeripheralError) -> Target {
        if entries[name] != nil { return .advertisement(name) }
        if services[name] != nil { return .service(name) }
        throw PeripheralError.unknownName(name, kind: "advertisement or service")
    }

    /// Applies `values` to advertisement or service `name`, each checked (an advertisement's
    /// as the config file is, a service's against its characteristic's format); the new values
    /// reach BlueZ (and subscribed centrals) at most every ``updateInterval``, the newest
    /// winning. Returns once the values are accepted.
    func change(_ name: String, _ values: [String: DBusValue]) throws(PeripheralError) {
        let target = try target(name)
        if name == ImprovConfig.name {
            throw PeripheralError(.invalid, "improv's values are Improv's own: its state changes as a client provisions the device (bleadvctl improv authorize allows it)")
        }
        let example = switch target {
        case .advertisement: "temperature=21.5"
        case .service: "\(services[name]!.live.service.characteristics.first?.name ?? "level")=80"
        }
        guard !values.isEmpty else {
            throw PeripheralError(.invalidValue, "no values given; set at least one, e.g. \(example)")
        }
        if let long = values.keys.first(where: { $0.count > 64 }) {
            let what = switch target {
            case .advertisement: "key of the config file"
            case .service: "characteristic of \(name)"
            }
            throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(long)) is no \(what)")
        }
        let startSender = switch target {
        case .advertisement: try changeAdvertisement(name, values)
        case .service: try changeService(name, values)
        }
        if startSender { post.yield(.send(target)) }
    }

    /// The advertisement's part of ``change(_:_:)``: returns whether a sender must start.
    private func changeAdvertisement(_ name: String, _ values: [String: DBusValue]) throws(PeripheralError) -> Bool {
        let entry = entries[name]!
        var changes: [String: ConfigValue] = [:]
        for (key, value) in values {
            changes[key] = try Self.configValue(value, key: key, like: entry.values.live.settings[entry.values.live.settingKey(key)])
        }
        let changed: ConfiguredAdvertisement
        let packetID = entry.packetID &+ 1
        do {
            changed = try ConfigParser.applying(changes, to: entry.values.live, name: name)
            _ = try changed.advertisement(packetID: packetID)
        } catch let error as ConfigError {
            throw PeripheralError(.invalidValue, error.description)
        } catch {
            throw PeripheralError(.invalidValue, "\(error)")
        }
        logger.info("\(name): set \(changes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
        // Values that are in force already change nothing, the packet id neither.
        guard changed != entry.values.live else { return false }
        entries[name]?.packetID = packetID
        return entries[name]!.values.set(changed)
    }

    /// The values of an advertisement as the config file would write them.
    func values(of name: String) -> [String: String] {
        (entries[name]?.values.live.shownSettings ?? [:]).mapValues { value in
            if case .string(let text) = value { text } else { value.description }
        }
    }

    /// Takes the newest values of `target` to the module (and BlueZ), then waits
    /// ``updateInterval`` before the next, until none is waiting. Runs as a child of the loop's
    /// task group.
    func send(_ target: Target) async {
        while true {
            switch target {
            case .advertisement(let name):
                guard entries[name]?.values.next() != nil, let advertisement = entries[name]?.advertisement else { return }
                do {
                    try await module.update(name, to: advertisement)
                } catch {
                    logger.warning("\(name): the new values did not reach BlueZ: \(error)")
                }
                let values = values(of: name)
                await announceValues(name, all: values, everyone: values)
            case .service(let name):
                guard let (sent, live) = services[name]?.next() else { return }
                for characteristic in live.service.characteristics {
                    let before = sent.service.characteristics.first { $0.name == characteristic.name }
                    guard before?.value != characteristic.value else { continue }
                    try? await module.setValue(characteristic.value, of: GATTCharacteristicID(service: name, characteristic: characteristic.name))
                }
                await announceValues(name, all: live.shownValues, everyone: live.publicValues)
            }
            guard (try? await clock.sleep(for: Self.updateInterval)) != nil else {
                switch target {
                case .advertisement(let name): entries[name]?.values.senderEnded()
                case .service(let name): services[name]?.senderEnded()
                }
                return
            }
        }
    }

    /// A value from the bus as the config's type: text is read as the type its key holds now.
    static func configValue(_ value: DBusValue, key: String, like current: ConfigValue?) throws(PeripheralError) -> ConfigValue {
        switch value {
        case .string(let text): return ConfigValue(parsing: text, like: current)
        case .boolean(let flag): return .bool(flag)
        case .double(let number) where number.isFinite: return .double(number)
        case .double(let number): throw PeripheralError(.invalidValue, "\(key): is \(number); give a finite number")
        case .byte(let n): return .integer(Int(n))
        case .int16(let n): return .integer(Int(n))
        case .uint16(let n): return .integer(Int(n))
        case .int32(let n): return .integer(Int(n))
        case .uint32(let n): return .integer(Int(n))
        case .int64(let n): return .integer(Int(n))
        case .uint64(let n) where n <= UInt64(Int.max): return .integer(Int(n))
        case .uint64(let n): throw PeripheralError(.invalidValue, "\(key): is \(n); no key takes a number over \(Int.max)")
        default:
            if let texts = value.stringArray { return .array(texts.map { .string($0) }) }
            throw PeripheralError(.invalidValue, "\(key): a value of D-Bus type '\(value.type)' cannot be set; use a string, a number, a boolean or an array of strings")
        }
    }
}
