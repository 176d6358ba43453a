import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import DBus
import Logging
import Peripheral

extension Daemon {
    /// Applies `values` to advertisement `name`, checked as the config file is, and sends the
    /// result to BlueZ in place; changes come at most every ``updateInterval``, the newest
    /// winning. Returns once the values are accepted.
    func change(_ name: String, _ values: [String: DBusValue]) throws(PeripheralError) {
        guard let entry = entries[name] else {
            if services[name] != nil { return try changeService(name, values) }
            throw PeripheralError.unknownName(name)
        }
        guard !values.isEmpty else {
            throw PeripheralError(.invalidValue, "no values given; set at least one, e.g. temperature=21.5")
        }
        if let long = values.keys.first(where: { $0.count > 64 }) {
            throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(long)) is no key of the config file")
        }
        var changes: [String: ConfigValue] = [:]
        for (key, value) in values {
            changes[key] = try Self.configValue(value, key: key, like: entry.live.settings[entry.live.settingKey(key)])
        }
        let changed: ConfiguredAdvertisement
        let advertisement: Advertisement
        let packetID = entry.packetID &+ 1
        do {
            changed = try ConfigParser.applying(changes, to: entry.live, name: name)
            advertisement = try changed.advertisement(packetID: packetID)
        } catch let error as ConfigError {
            throw PeripheralError(.invalidValue, error.description)
        } catch {
            throw PeripheralError(.invalidValue, "\(error)")
        }
        entries[name]?.live = changed
        entries[name]?.packetID = packetID
        entries[name]?.pending = advertisement
        logger.info("\(name): set \(changes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
        guard !entry.sending else { return }
        entries[name]?.sending = true
        post.yield(.send(name))
    }

    /// The values of an advertisement as the config file would write them.
    func values(of name: String) -> [String: String] {
        (entries[name]?.live.shownSettings ?? [:]).mapValues { value in
            if case .string(let text) = value { text } else { value.description }
        }
    }

    /// Sends the newest change of `name` to BlueZ, then waits ``updateInterval`` before the
    /// next, until none is waiting. Runs as a child of the loop's task group.
    func send(_ name: String) async {
        if services[name] != nil { return await sendService(name) }
        defer { entries[name]?.sending = false }
        while let advertisement = entries[name]?.pending {
            entries[name]?.pending = nil
            do {
                try await module.update(name, to: advertisement)
            } catch {
                logger.warning("\(name): the new values did not reach BlueZ: \(error)")
            }
            await ControlService.valuesChanged(name, values(of: name), on: connection)
            guard (try? await clock.sleep(for: Self.updateInterval)) != nil else { return }
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
