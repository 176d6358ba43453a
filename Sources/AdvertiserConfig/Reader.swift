import Peripheral
import TOMLKit

/// Walks the parsed TOML, turning each value into its typed field or a located error.
struct Reader {
    let file: String
    let lines: SourceLines
    /// The config's services, by name: what an advertisement's `services` may name.
    var services: [String: BluetoothUUID] = [:]

    static let topKeys = Set(["adapter", "power_on", "alias", "improv", "advertisement", "service"] + DaemonConfig.featureTables.map(\.key))

    func error(_ path: [String], _ message: String) -> ConfigError {
        ConfigError(file: file, line: lines.line(of: path), key: path.joined(separator: "."), message: message)
    }

    func config(_ root: [String: TOMLNode]) throws(ConfigError) -> DaemonConfig {
        try checkKeys(root, allowed: Self.topKeys, at: [])
        var config = DaemonConfig()
        config.adapter = try root["adapter"].map { value throws(ConfigError) in try string(value, ["adapter"]) }
        if let adapter = config.adapter, !DaemonConfig.isAdapter(adapter) {
            throw error(["adapter"], DaemonConfig.notAnAdapter(adapter))
        }
        config.powerOn = try root["power_on"].map { value throws(ConfigError) in try bool(value, ["power_on"]) } ?? true
        if let node = root["alias"] {
            let alias = try string(node, ["alias"])
            guard !alias.isEmpty, alias.utf8.count <= DaemonConfig.maximumAliasLength,
                  !alias.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw error(["alias"], "is \(alias.utf8.count) bytes\(alias.isEmpty ? "" : " or holds a control character"); an alias is 1 to \(DaemonConfig.maximumAliasLength) bytes of text")
            }
            config.alias = alias
        }
        for feature in DaemonConfig.featureTables {
            if let section = root[feature.key] { try feature.read(self, try table(section, [feature.key]), &config) }
        }
        if let section = root["service"] { config.services = try services(section) }
        if let section = root["improv"] {
            let improv = try improv(table(section, ["improv"]))
            if config.services[ImprovConfig.name] != nil {
                throw error(["service", ImprovConfig.name], "the [improv] table's service is named improv; give this one another name")
            }
            config.improv = improv
            config.services[ImprovConfig.name] = improv.service(state: improv.firstState, error: .none)
        }
        var reader = self
        reader.services = config.services.mapValues(\.service.uuid)
        if let improv = config.improv { config.advertisements[ImprovConfig.name] = improv.advertisement(state: improv.firstState) }
        guard let section = root["advertisement"] else { return config }
        let advertisements = try table(section, ["advertisement"])
        guard advertisements.count <= ConfigParser.maximumAdvertisements else {
            throw error(["advertisement"], "has \(advertisements.count) advertisements; a config file may define at most \(ConfigParser.maximumAdvertisements)")
        }
        for name in advertisements.keys.sorted() {
            let path = ["advertisement", name]
            try checkName(name, path)
            if config.improv != nil, name == ImprovConfig.name {
                throw error(path, "the [improv] table's advertisement is named improv; give this one another name")
            }
            if config.services[name] != nil {
                throw error(path, "a service is named \(name) too; bleadvctl names one or the other, so give them different names")
            }
            config.advertisements[name] = try reader.advertisement(table(advertisements[name]!, path), path)
        }
        return config
    }

    /// The `[pairing]` table.
    func pairing(_ fields: [String: TOMLNode]) throws(ConfigError) -> PairingConfig {
        let path = ["pairing"]
        try checkKeys(fields, allowed: ["method", "window_seconds", "attempts"], at: path)
        var pairing = PairingConfig()
        if let node = fields["method"] {
            let text = try string(node, path + ["method"])
            guard text == "off" || PairingMethod(rawValue: text) != nil else {
                let known = ["off"] + PairingMethod.allCases.map(\.rawValue)
                throw error(path + ["method"], "\(Untrusted.quoted(text, limit: 24)) is not a pairing method; use \(known.joined(separator: ", "))")
            }
            pairing.method = PairingMethod(rawValue: text)
        }
        if let node = fields["window_seconds"] {
            pairing.window = .seconds(try number(node, path + ["window_seconds"], PairingConfig.windowRange))
        }
        if let node = fields["attempts"] {
            pairing.attempts = try number(node, path + ["attempts"], PairingConfig.attemptsRange)
        }
        return pairing
    }

    // MARK: Values

    /// A name the file gives (an advertisement's, a service's, a characteristic's), at `path`:
    /// what bleadvctl and the bus can carry (``DaemonConfig/isAdapterName(_:)``'s rule).
    func checkName(_ name: String, _ path: [String]) throws(ConfigError) {
        guard DaemonConfig.isAdapterName(name) else {
            throw error(path, "names may use letters, digits, '-' and '_' (1 to 64 characters)")
        }
    }

    func checkKeys(_ table: [String: TOMLNode], allowed: Set<String>, at path: [String]) throws(ConfigError) {
        for key in table.keys.sorted() where !allowed.contains(key) {
            throw error(path + [key], "unknown key; known keys: \(allowed.sorted().joined(separator: ", "))")
        }
    }

    func table(_ value: TOMLNode, _ path: [String]) throws(ConfigError) -> [String: TOMLNode] {
        guard let table = value.table else { throw error(path, "must be a table, not \(value.type)") }
        return table
    }

    func string(_ value: TOMLNode, _ path: [String]) throws(ConfigError) -> String {
        guard let text = value.string else { throw error(path, "must be a string, not \(value.type)") }
        guard !text.utf8.contains(0) else { throw error(path, "contains a NUL character") }
        return text
    }

    func bool(_ value: TOMLNode, _ path: [String]) throws(ConfigError) -> Bool {
        guard let flag = value.bool else { throw error(path, "must be true or false, not \(value.type)") }
        return flag
    }

    /// An integer that fits `T`, within `range` (all of `T` unless narrower).
    func number<T: FixedWidthInteger>(
        _ value: TOMLNode, _ path: [String], _ range: ClosedRange<T> = T.min...T.max
    ) throws(ConfigError) -> T {
        guard let number = value.int else {
            let quoted = value.string.map { " (\(Untrusted.quoted($0, limit: 24)) is a string: write a number without quotes)" } ?? ""
            throw error(path, "must be an integer, not \(value.type)\(quoted)")
        }
        guard let fitting = T(exactly: number), range.contains(fitting) else {
            throw error(path, "is \(number); it must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return fitting
    }

    func strings(_ value: TOMLNode, _ path: [String]) throws(ConfigError) -> [String] {
        guard let array = value.array else { throw error(path, "must be an array of strings, not \(value.type)") }
        var result: [String] = []
        for element in array {
            guard let text = element.string else { throw error(path, "must be an array of strings; found \(element.type)") }
            result.append(text)
        }
        return result
    }

    func uuids(_ value: TOMLNode, _ path: [String]) throws(ConfigError) -> [BluetoothUUID] {
        var result: [BluetoothUUID] = []
        for text in try strings(value, path) { result.append(try parseUUID(text, path)) }
        return result
    }

    func parseUUID(_ text: String, _ path: [String]) throws(ConfigError) -> BluetoothUUID {
        do {
            return try BluetoothUUID(text)
        } catch {
            throw self.error(path, "\"\(text)\" is not a UUID (use 4 or 8 hex digits, or the 36-character form)")
        }
    }

    func hex(_ value: TOMLNode, _ path: [String]) throws(ConfigError) -> [UInt8] {
        let text = try string(value, path)
        guard let bytes = Hex.decode(text) else { throw error(path, "\"\(text)\" is not hex bytes (e.g. \"0102ff\")") }
        return bytes
    }

    /// A number written as a key: `0xFFFF` or `65535`.
    func integer(_ key: String, in range: ClosedRange<Int>, _ path: [String], what: String) throws(ConfigError) -> Int {
        // Digits only: Int(_:radix:) would also take a sign ("-0", "0x+4C").
        let lower = key.lowercased()
        let hex = lower.hasPrefix("0x")
        let digits = hex ? lower.dropFirst(2) : Substring(lower)
        let number = digits.allSatisfy({ $0.isASCII && (hex ? $0.isHexDigit : $0.isNumber) }) ? Int(digits, radix: hex ? 16 : 10) : nil
        guard let number, range.contains(number) else {
            throw error(path, "\"\(key)\" is not \(what) (a number from \(range.lowerBound) to 0x\(String(range.upperBound, radix: 16, uppercase: true)))")
        }
        return number
    }
}

extension Character {
    /// Letters, digits, `-` and `_`: what names (of advertisements, of adapters) may use.
    var isNameCharacter: Bool {
        isASCII && (isLetter || isNumber || self == "-" || self == "_")
    }
}
