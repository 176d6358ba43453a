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
    /// number, else a string. Numbers are read as TOML writes them: `-12`, `0x10`, `21.5`,
    /// `1e3`; not as C reads them (`0x1p4` is not 16, `inf` is text). Where the key holds an
    /// array, or a number or true/false, commas separate several values of its elements' type
    /// (`temperature=21.5,19,64.2`).
    public init(parsing text: String, like current: ConfigValue?) {
        // Numbers or flags, several: an array's elements' type, or one value's with a comma. An
        // empty one stays, for the reader to refuse.
        let element: ConfigValue? = if case .array(let elements)? = current { elements.first } else if text.contains(",") { current } else { nil }
        if let element, !element.isString {
            self = .array(text.split(separator: ",", omittingEmptySubsequences: false).map { ConfigValue(parsing: String($0), like: element) })
            return
        }
        switch current {
        case .string?: self = .string(text)
        case .array?: self = .array(text.split(separator: ",").map { .string(String($0)) })
        case .bool?: self = text == "true" ? .bool(true) : text == "false" ? .bool(false) : .string(text)
        case .integer?, .double?, nil:
            if current == nil, text == "true" || text == "false" { self = .bool(text == "true") }
            else if let number = Self.integer(text) { self = .integer(number) }
            else if text.allSatisfy({ "0123456789+-.eE".contains($0) }), let number = Double(text), number.isFinite { self = .double(number) }
            else { self = .string(text) }
        }
    }

    private var isString: Bool { if case .string = self { true } else { false } }

    /// A TOML integer: decimal with an optional sign, or `0x`, `0o`, `0b` and digits.
    private static func integer(_ text: String) -> Int? {
        for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] where text.hasPrefix(prefix) {
            let digits = text.dropFirst(2)
            guard digits.allSatisfy({ $0.isASCII && $0.isHexDigit }) else { return nil }
            return Int(digits, radix: radix)
        }
        return Int(text)
    }

    init?(toml value: TOMLNode) {
        switch value {
        case .string(let text): self = .string(text)
        case .integer(let number): self = .integer(number)
        case .double(let number): self = .double(number)
        case .bool(let flag): self = .bool(flag)
        case .array(let elements):
            var values: [ConfigValue] = []
            for element in elements {
                guard let value = ConfigValue(toml: element) else { return nil }
                values.append(value)
            }
            self = .array(values)
        case .table, .other: return nil
        }
    }

    var toml: TOMLNode {
        switch self {
        case .string(let text): .string(text)
        case .integer(let number): .integer(number)
        case .double(let number): .double(number)
        case .bool(let flag): .bool(flag)
        case .array(let values): .array(values.map(\.toml))
        }
    }
}

extension ConfiguredAdvertisement {
    /// The preset this advertisement uses, if any (`ibeacon`, `bthome`, ...): an
    /// `eddystone_tlm` table may be empty, and has no settings then.
    public var preset: String? {
        settings.keys.lazy.compactMap { $0.split(separator: ".").first.map(String.init) }.first { Reader.presetKeys[$0] != nil }
            ?? (telemetry != nil ? "eddystone_tlm" : nil)
    }

    /// The key of ``settings`` that `key` (as given to `bleadvctl set`) names: for a preset,
    /// its own keys are given without its name (`temperature` is `bthome.temperature`).
    public func settingKey(_ key: String) -> String {
        guard let preset, !key.contains(".") else { return key }
        return preset + "." + key
    }

    /// An advertisement's table as settings: `key` for a value, `key.subkey` for a value in a
    /// table, at any depth (`manufacturer_data.0xFFFF`, `ibeacon.major`,
    /// `scan_response.manufacturer_data.0xFFFF`).
    static func settings(of table: [String: TOMLNode]) -> [String: ConfigValue] {
        var settings: [String: ConfigValue] = [:]
        for (key, value) in table {
            if let inner = value.table {
                for (subkey, setting) in Self.settings(of: inner) { settings[key + "." + subkey] = setting }
            } else if let value = ConfigValue(toml: value) {
                settings[key] = value
            }
        }
        return settings
    }

    /// The table that ``settings(of:)`` came from.
    static func table(of settings: [String: ConfigValue]) -> [String: TOMLNode] {
        var table: [String: TOMLNode] = [:]
        var inner: [String: [String: ConfigValue]] = [:]
        for (key, value) in settings {
            let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
            if parts.count == 2 {
                inner[parts[0], default: [:]][parts[1]] = value
            } else {
                table[key] = value.toml
            }
        }
        for (key, entries) in inner { table[key] = .table(Self.table(of: entries)) }
        return table
    }
}
