import TOMLKit

/// One value of the config file, as `bleadvctl set` and the control API's `Set` pass it: a
/// string, a whole number, a decimal number, true or false, or an array of them.
public enum ConfigValue: Hashable, Sendable, CustomStringConvertible {
    /// A string.
    case string(String)
    /// A whole number.
    case integer(Int)
    /// A decimal number.
    case double(Double)
    /// true or false.
    case bool(Bool)
    /// An array.
    case array([ConfigValue])

    /// The value as it would be written in the config file.
    public var description: String {
        switch self {
        case .string(let text): "\"\(text)\""
        case .integer(let number): String(number)
        case .double(let number): String(number)
        case .bool(let flag): String(flag)
        case .array(let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        }
    }

    /// Text typed by a person (`bleadvctl set NAME KEY=VALUE`), given the type the key holds
    /// now, if any: what it holds wins; otherwise true/false, a whole number, a decimal
    /// number, else a string.
    public init(parsing text: String, like current: ConfigValue?) {
        switch current {
        case .string?: self = .string(text)
        case .array?: self = .array(text.split(separator: ",").map { .string(String($0)) })
        case .bool?: self = text == "true" ? .bool(true) : text == "false" ? .bool(false) : .string(text)
        case .integer?, .double?, nil:
            if current == nil, text == "true" || text == "false" { self = .bool(text == "true") }
            else if let number = Int(text) { self = .integer(number) }
            else if let number = Double(text), number.isFinite { self = .double(number) }
            else { self = .string(text) }
        }
    }

    init?(toml value: any TOMLValueConvertible) {
        if let text = value.string { self = .string(text) }
        else if let number = value.int { self = .integer(number) }
        else if let number = value.double { self = .double(number) }
        else if let flag = value.bool { self = .bool(flag) }
        else if let array = value.array {
            var values: [ConfigValue] = []
            for element in array {
                guard let value = ConfigValue(toml: element) else { return nil }
                values.append(value)
            }
            self = .array(values)
        } else { return nil }
    }

    var toml: any TOMLValueConvertible {
        switch self {
        case .string(let text): text
        case .integer(let number): number
        case .double(let number): number
        case .bool(let flag): flag
        case .array(let values): TOMLArray(values.map(\.toml))
        }
    }
}

extension ConfiguredAdvertisement {
    /// The preset this advertisement uses, if any (`ibeacon`, `bthome`, ...).
    public var preset: String? {
        settings.keys.lazy.compactMap { $0.split(separator: ".").first.map(String.init) }.first { Reader.presetKeys[$0] != nil }
    }

    /// The key of ``settings`` that `key` (as given to `bleadvctl set`) names: for a preset,
    /// its own keys are given without its name (`temperature` is `bthome.temperature`).
    public func settingKey(_ key: String) -> String {
        guard let preset, !key.contains(".") else { return key }
        return preset + "." + key
    }

    /// An advertisement's table as settings: `key` for a value, `key.subkey` for a value in a
    /// table (`manufacturer_data.0xFFFF`, `ibeacon.major`, `bthome.temperature`).
    static func settings(of table: TOMLTable) -> [String: ConfigValue] {
        var settings: [String: ConfigValue] = [:]
        for key in table.keys {
            guard let value = table[key] else { continue }
            if let inner = value.table {
                for subkey in inner.keys {
                    if let value = inner[subkey].flatMap(ConfigValue.init(toml:)) { settings[key + "." + subkey] = value }
                }
            } else if let value = ConfigValue(toml: value) {
                settings[key] = value
            }
        }
        return settings
    }

    /// The table that ``settings(of:)`` came from.
    static func table(of settings: [String: ConfigValue]) -> TOMLTable {
        let table = TOMLTable()
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
            if parts.count == 2 {
                if table[parts[0]]?.table == nil { table[parts[0]] = TOMLTable() }
                table[parts[0]]!.table![parts[1]] = value.toml
            } else {
                table[key] = value.toml
            }
        }
        return table
    }
}
