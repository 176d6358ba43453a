public import Peripheral

/// One `[service.NAME]` table: a GATT service with the values in force.
public struct ConfiguredService: Hashable, Sendable {
    /// The service, its characteristics holding the values' bytes.
    public var service: GATTService
    /// Each characteristic's value as the config file writes it, by characteristic name (one
    /// read from a program has none until it ran).
    public var values: [String: GATTValue]
    /// The programs that answer reads, by characteristic name (`read`).
    public var programs: [String: ReadProgram]

    /// A service.
    public init(service: GATTService, values: [String: GATTValue], programs: [String: ReadProgram] = [:]) {
        self.service = service
        self.values = values
        self.programs = programs
    }

    /// The values as the config file would write them (text as it is: escape it before a
    /// terminal), but a write-only characteristic's: what centrals write there is a secret,
    /// never in Status or a signal.
    public var shownValues: [String: String] {
        let secrets = Set(service.characteristics.filter(\.isSecret).map(\.name))
        return values.filter { !secrets.contains($0.key) }.mapValues(\.description)
    }

    /// ``shownValues`` without those of secured characteristics (their `security` is not
    /// none): what every local user may see, as an unbonded central may.
    public var publicValues: [String: String] {
        shownValues.filter { !isSecured($0.key) }
    }

    /// Whether `characteristic` takes only bonded centrals (its `security` is not none).
    public func isSecured(_ characteristic: String) -> Bool {
        (service.characteristics.first { $0.name == characteristic }?.security ?? .none) != .none
    }

    /// Whether `characteristic` is write-only, its value a secret.
    public func isSecret(_ characteristic: String) -> Bool {
        service.characteristics.first { $0.name == characteristic }?.isSecret ?? false
    }

    /// The service with `changes` applied (`bleadvctl set NAME KEY=VALUE`), each checked
    /// against its characteristic's format.
    /// - Throws: ``ConfigError`` (no file or line) naming `service.NAME.KEY`: no such
    ///   characteristic, or a value that does not fit it.
    public func applying(_ changes: [String: ConfigValue], name: String) throws(ConfigError) -> ConfiguredService {
        var changed = self
        for (key, value) in changes.sorted(by: { $0.key < $1.key }) {
            let where_ = "service.\(name).\(key)"
            guard let index = service.characteristics.firstIndex(where: { $0.name == key }) else {
                throw ConfigError(file: "", line: nil, key: where_, message:
                    "no such characteristic; \(name) has \(service.characteristics.map(\.name).joined(separator: ", "))")
            }
            if let program = programs[key] {
                throw ConfigError(file: "", line: nil, key: where_, message:
                    "is read from \(Untrusted.quoted(program.command[0], limit: 64)) when a central asks; it is not set")
            }
            let format = service.characteristics[index].format
            do {
                let parsed = try Self.value(value, format: format)
                changed.store(parsed, bytes: try format.encode(parsed), for: key)
            } catch {
                throw ConfigError(file: "", line: nil, key: where_, message: error.message)
            }
        }
        return changed
    }

    /// Makes `value` (on air: `bytes`) the value of characteristic `key`; a service without
    /// that characteristic stays as it is.
    public mutating func store(_ value: GATTValue, bytes: [UInt8], for key: String) {
        guard let index = service.characteristics.firstIndex(where: { $0.name == key }) else { return }
        service.characteristics[index].value = bytes
        values[key] = value
    }

    /// `value` as a value of `format`: a number for the numeric formats, text for utf8, hex
    /// digits for hex; text typed on the command line is read as the format says.
    static func value(_ value: ConfigValue, format: GATTFormat) throws(PeripheralError) -> GATTValue {
        switch (format.kind, value) {
        case (.utf8, .string(let text)): return .text(text)
        case (.hex, .string(let text)):
            guard let bytes = Hex.decode(text) else { throw PeripheralError(.invalidValue, "\(Untrusted.quoted(text, limit: 24)) is not hex bytes (e.g. \"0102ff\")") }
            return .bytes(bytes)
        case (_, .integer(let number)) where format.isNumeric: return .number(Double(number))
        case (_, .double(let number)) where format.isNumeric: return .number(number)
        case (_, .string(let text)) where format.isNumeric:
            guard let number = Double(text), number.isFinite, text.allSatisfy({ "0123456789+-.eE".contains($0) }) else {
                throw PeripheralError(.invalidValue, "\(Untrusted.quoted(text, limit: 24)) is not a number")
            }
            return .number(number)
        default:
            throw PeripheralError(.invalidValue, "a \(format.kind.rawValue) characteristic takes \(format.isNumeric ? "a number" : format.kind == .hex ? "hex bytes as a string" : "a string"), not \(Untrusted.shown("\(value)", limit: 40))")
        }
    }
}

/// A service preset: the SIG's service and characteristics, each under a config key.
struct ServicePreset: Sendable {
    struct Row: Sendable {
        let key: String
        let uuid: UInt16
        let format: GATTFormat
        let flags: Set<GATTFlag>
    }

    let uuid: UInt16
    let rows: [Row]

    var keys: Set<String> { Set(rows.map(\.key)) }

    /// The presets, by the key of their table (`[service.NAME.battery]`).
    static let all: [String: ServicePreset] = [
        // Battery Service 0x180F: Battery Level 0x2A19, a percentage (uint8, 0 to 100).
        "battery": ServicePreset(uuid: 0x180F, rows: [
            Row(key: "level", uuid: 0x2A19, format: GATTFormat(.uint8, range: 0...100), flags: [.read, .notify]),
        ]),
        // Device Information 0x180A: UTF-8 strings.
        "device_information": ServicePreset(uuid: 0x180A, rows: [
            Row(key: "manufacturer", uuid: 0x2A29, format: GATTFormat(.utf8), flags: [.read]),
            Row(key: "model", uuid: 0x2A24, format: GATTFormat(.utf8), flags: [.read]),
            Row(key: "serial", uuid: 0x2A25, format: GATTFormat(.utf8), flags: [.read]),
            Row(key: "hardware_revision", uuid: 0x2A27, format: GATTFormat(.utf8), flags: [.read]),
            Row(key: "firmware_revision", uuid: 0x2A26, format: GATTFormat(.utf8), flags: [.read]),
            Row(key: "software_revision", uuid: 0x2A28, format: GATTFormat(.utf8), flags: [.read]),
        ]),
        // Environmental Sensing 0x181A: Temperature 0x2A6E (sint16, 0.01 °C), Humidity 0x2A6F
        // (uint16, 0.01 %), Pressure 0x2A6D (uint32, 0.1 Pa; written in hPa here, as BTHome's).
        "environmental_sensing": ServicePreset(uuid: 0x181A, rows: [
            Row(key: "temperature", uuid: 0x2A6E, format: GATTFormat(.sint16, exponent: -2, range: -273.15...327.67), flags: [.read, .notify]),
            Row(key: "humidity", uuid: 0x2A6F, format: GATTFormat(.uint16, exponent: -2, range: 0...100), flags: [.read, .notify]),
            Row(key: "pressure", uuid: 0x2A6D, format: GATTFormat(.uint32, exponent: -3, range: 0...4_294_967), flags: [.read, .notify]),
        ]),
    ]
}

extension Reader {
    /// The keys of a custom service's table, and of each of its characteristics.
    static let serviceKeys: Set<String> = ["uuid", "primary", "characteristic"]
    static let characteristicKeys = Set<String>([
        "uuid", "format", "flags", "value", "exponent", "min", "max", "max_length", "description", "security", "secret",
    ]).union(ReadProgram.keys)

    /// The most services one file may define, and characteristics one service may have.
    static let maximumServices = 32
    static let maximumCharacteristics = 32

    /// The `[service]` tables.
    func services(_ section: TOMLNode) throws(ConfigError) -> [String: ConfiguredService] {
        let tables = try table(section, ["service"])
        guard tables.count <= Self.maximumServices else {
            throw error(["service"], "has \(tables.count) services; a config file may define at most \(Self.maximumServices)")
        }
        var services: [String: ConfiguredService] = [:]
        for name in tables.keys.sorted() {
            let path = ["service", name]
            try checkName(name, path)
            services[name] = try service(name, table(tables[name]!, path), path)
        }
        return services
    }

    func service(_ name: String, _ entry: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> ConfiguredService {
        let presets = entry.keys.filter { ServicePreset.all[$0] != nil }.sorted()
        if let preset = presets.first {
            if let other = entry.keys.sorted().first(where: { $0 != preset }) {
                throw error(path + [other], ServicePreset.all[other] != nil
                    ? "only one preset per service (also has \(preset))" : "cannot be combined with the \(preset) preset")
            }
            return try presetService(name, preset, table(entry[preset]!, path + [preset]), path + [preset])
        }
        let known = Self.serviceKeys.union(ServicePreset.all.keys)
        try checkKeys(entry, allowed: known, at: path)
        guard let uuidNode = entry["uuid"] else {
            throw error(path + ["uuid"], "missing; give the service's UUID, or a preset (\(ServicePreset.all.keys.sorted().joined(separator: ", ")))")
        }
        let uuid = try parseUUID(try string(uuidNode, path + ["uuid"]), path + ["uuid"])
        let primary = try entry["primary"].map { value throws(ConfigError) in try bool(value, path + ["primary"]) } ?? true
        guard let characteristicsNode = entry["characteristic"] else {
            throw error(path + ["characteristic"], "missing; give at least one [\(path.joined(separator: ".")).characteristic.NAME] table")
        }
        let tables = try table(characteristicsNode, path + ["characteristic"])
        guard !tables.isEmpty, tables.count <= Self.maximumCharacteristics else {
            throw error(path + ["characteristic"], "has \(tables.count) characteristics; a service has 1 to \(Self.maximumCharacteristics)")
        }
        var service = GATTService(name: name, uuid: uuid, primary: primary, characteristics: [])
        var values: [String: GATTValue] = [:]
        var programs: [String: ReadProgram] = [:]
        for key in tables.keys.sorted() {
            let at = path + ["characteristic", key]
            try checkName(key, at)
            let (characteristic, value, program) = try customCharacteristic(key, table(tables[key]!, at), at)
            service.characteristics.append(characteristic)
            values[key] = value
            programs[key] = program
        }
        return ConfiguredService(service: service, values: values, programs: programs)
    }

    private func presetService(_ name: String, _ preset: String, _ fields: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> ConfiguredService {
        let row = ServicePreset.all[preset]!
        try checkKeys(fields, allowed: row.keys, at: path)
        guard !fields.isEmpty else {
            throw error(path, "has no value; give at least one of \(row.rows.map(\.key).joined(separator: ", "))")
        }
        var service = GATTService(name: name, uuid: BluetoothUUID(row.uuid), characteristics: [])
        var values: [String: GATTValue] = [:]
        for characteristic in row.rows {
            guard let node = fields[characteristic.key] else { continue }
            let (value, bytes) = try characteristicValue(node, format: characteristic.format, path + [characteristic.key])
            service.characteristics.append(GATTCharacteristic(
                name: characteristic.key, uuid: BluetoothUUID(characteristic.uuid), flags: characteristic.flags,
                format: characteristic.format, value: bytes))
            values[characteristic.key] = value
        }
        return ConfiguredService(service: service, values: values)
    }

    private func customCharacteristic(_ name: String, _ fields: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> (GATTCharacteristic, GATTValue?, ReadProgram?) {
        try checkKeys(fields, allowed: Self.characteristicKeys, at: path)
        func required(_ key: String) throws(ConfigError) -> TOMLNode {
            guard let value = fields[key] else {
                throw error(path + [key], "missing; every characteristic needs uuid, format, flags and value (or read, a program that gives the value)")
            }
            return value
        }
        let uuid = try parseUUID(try string(required("uuid"), path + ["uuid"]), path + ["uuid"])
        let formatName = try string(required("format"), path + ["format"])
        guard let kind = GATTFormat.Kind(rawValue: formatName) else {
            throw error(path + ["format"], "\(Untrusted.quoted(formatName, limit: 24)) is not a format; use \(GATTFormat.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var flags: Set<GATTFlag> = []
        for text in try strings(required("flags"), path + ["flags"]) {
            guard let flag = GATTFlag(rawValue: text) else {
                throw error(path + ["flags"], "\(Untrusted.quoted(text, limit: 24)) is not a flag; use \(GATTFlag.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            flags.insert(flag)
        }
        guard !flags.isEmpty else { throw error(path + ["flags"], "is empty; give at least one, e.g. [\"read\"]") }
        var format = GATTFormat(kind)
        if let node = fields["exponent"] {
            guard format.isNumeric, kind != .float32 else { throw error(path + ["exponent"], "only integer formats take an exponent") }
            format.exponent = try number(node, path + ["exponent"], -10...10)
        }
        let minimum = try fields["min"].map { node throws(ConfigError) in try decimal(node, path + ["min"], numeric: format.isNumeric) }
        let maximum = try fields["max"].map { node throws(ConfigError) in try decimal(node, path + ["max"], numeric: format.isNumeric) }
        if minimum != nil || maximum != nil {
            let low = minimum ?? -Double.greatestFiniteMagnitude, high = maximum ?? Double.greatestFiniteMagnitude
            guard low <= high else { throw error(path + ["max"], "is below min") }
            format.range = low...high
        }
        if let node = fields["max_length"] {
            guard !format.isNumeric else { throw error(path + ["max_length"], "only utf8 and hex values take a max_length (a \(kind.rawValue) is \(format.size!) bytes)") }
            format.maximumLength = try number(node, path + ["max_length"], 1...GATTFormat.attributeLimit)
        }
        let program = try readProgram(fields, flags: flags, path)
        let (value, bytes): (GATTValue?, [UInt8]) = if program != nil && fields["value"] == nil { (nil, []) }
            else { try characteristicValue(required("value"), format: format, path + ["value"]) }
        let description = try fields["description"].map { node throws(ConfigError) in try string(node, path + ["description"]) }
        if let description, description.isEmpty || description.utf8.count > GATTFormat.attributeLimit {
            throw error(path + ["description"], "is \(description.utf8.count) bytes; a description is 1 to \(GATTFormat.attributeLimit)")
        }
        var characteristic = GATTCharacteristic(
            name: name, uuid: uuid, flags: flags, format: format, value: bytes, userDescription: description)
        characteristic.security = try security(fields["security"], path + ["security"], writable: flags.contains(where: \.isWrite))
        if let node = fields["secret"], try bool(node, path + ["secret"]), !characteristic.isSecret {
            let readable = characteristic.readableFlags.sorted().map(\.rawValue).joined(separator: ", ")
            throw error(path + ["secret"], "is true, but flags give \(readable): a central could read back what is kept secret; drop those flags or secret")
        }
        return (characteristic, value, program)
    }

    /// A characteristic's `security`: as the file says, else `encrypted` for one that takes
    /// writes (only a bonded central may change it) and `none` for the others.
    private func security(_ node: TOMLNode?, _ path: [String], writable: Bool) throws(ConfigError) -> GATTSecurity {
        guard let node else { return writable ? .encrypted : .none }
        let text = try string(node, path)
        guard let security = GATTSecurity(rawValue: text) else {
            throw error(path, "\(Untrusted.quoted(text, limit: 24)) is not a security level; use \(GATTSecurity.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return security
    }

    private func decimal(_ node: TOMLNode, _ path: [String], numeric: Bool) throws(ConfigError) -> Double {
        guard numeric else { throw error(path, "only numeric formats take a min or max") }
        return try decimal(node, path)
    }

    /// A finite number, whole or not.
    func decimal(_ node: TOMLNode, _ path: [String]) throws(ConfigError) -> Double {
        guard let number = node.finiteNumber else { throw error(path, "must be a number, not \(node.type)") }
        return number
    }

    private func characteristicValue(_ node: TOMLNode, format: GATTFormat, _ path: [String]) throws(ConfigError) -> (GATTValue, [UInt8]) {
        guard let config = ConfigValue(toml: node) else { throw error(path, "must be a value, not \(node.type)") }
        do {
            let value = try ConfiguredService.value(config, format: format)
            return (value, try format.encode(value))
        } catch {
            throw self.error(path, error.message)
        }
    }
}
