#if canImport(Glibc)
import Glibc
#endif
import Peripheral
import TOMLKit

/// Reads the config file: TOML in, a ``DaemonConfig`` of validated advertisements out. Every
/// problem is a ``ConfigError`` naming the file, the line and the key; unknown keys are errors.
public enum ConfigParser {
    /// The largest config file read: far more than any real one, small enough that a wrong
    /// path (a log, a disk image) is refused rather than read.
    public static let maximumFileSize = 1 << 20
    /// The most advertisements one file may define.
    public static let maximumAdvertisements = 1000

    /// Reads and parses the file at `path`, in this process: toml++ aborts on some malformed
    /// files, so a program that must survive any file loads it through ``ConfigCheck`` instead.
    public static func load(path: String) throws(ConfigError) -> DaemonConfig {
        try parse(try contents(of: path), file: path)
    }

    /// The text of the file at `path`, or why it cannot be a config file: missing, a directory
    /// or another kind of file, unreadable, too big, a NUL byte, not UTF-8 (with the line).
    static func contents(of path: String) throws(ConfigError) -> String {
        func failure(_ message: String, line: Int? = nil) -> ConfigError {
            ConfigError(file: path, line: line, key: "", message: message)
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw failure(errno == ENOENT ? "the config file does not exist" : "the config file cannot be read: \(String(cString: strerror(errno)))")
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw failure("is a directory, not a config file")
        default: throw failure("is not a regular file (a FIFO, a device or a socket); give a config file")
        }
        guard info.st_size <= maximumFileSize else {
            throw failure("is \(info.st_size) bytes; a config file is at most \(maximumFileSize) bytes")
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("the config file cannot be read: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count <= maximumFileSize {
            let count = read(descriptor, &buffer, buffer.count)
            guard count >= 0 else { throw failure("the config file cannot be read: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        guard bytes.count <= maximumFileSize else {
            throw failure("grew past \(maximumFileSize) bytes while it was read; a config file is at most that")
        }
        return try text(bytes, file: path)
    }

    /// `bytes` as UTF-8 text.
    static func text(_ bytes: [UInt8], file: String) throws(ConfigError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            var offset = 0
            var iterator = bytes.makeIterator()
            var decoder = UTF8()
            decoding: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): offset += UTF8.width(scalar)
                case .emptyInput, .error: break decoding
                }
            }
            throw ConfigError(file: file, line: line(at: offset, in: bytes), key: "", message: "is not UTF-8 text (byte \(offset + 1) is not)")
        }
        return text
    }

    /// The line (1-based) that byte `offset` of `bytes` is on.
    static func line(at offset: Int, in bytes: [UInt8]) -> Int {
        bytes[..<offset].reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    }

    /// Parses config text; `file` names it in errors.
    public static func parse(_ text: String, file: String) throws(ConfigError) -> DaemonConfig {
        // TOMLKit reads a C string: it would stop at a NUL and ignore the rest unseen.
        if let nul = text.utf8.firstIndex(of: 0) {
            let line = line(at: text.utf8.distance(from: text.utf8.startIndex, to: nul), in: Array(text.utf8))
            throw ConfigError(file: file, line: line, key: "", message: "contains a NUL byte; a config file is text")
        }
        let root: [String: TOMLNode]
        do {
            root = TOMLNode(try TOMLTable(string: text)).table ?? [:]
        } catch let error as TOMLParseError {
            throw ConfigError(file: file, line: error.source.begin.line, key: "", message: Self.shown(error, in: text))
        } catch {
            throw ConfigError(file: file, line: nil, key: "", message: "not valid TOML: \(error)")
        }
        let reader = Reader(file: file, lines: SourceLines(text))
        return try reader.config(root)
    }
}

extension ConfigParser {
    /// What a syntax error says, unless the line it is on holds a secret: the TOML library
    /// quotes the text it could not read, and an unquoted key would be that text.
    static func shown(_ error: TOMLParseError, in text: String) -> String {
        let line = error.source.begin.line
        let source = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .dropFirst(max(0, line - 1)).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let secret = ConfiguredAdvertisement.secretKeys.compactMap { $0.split(separator: ".").last }.first { source.contains($0) }
        guard let secret else { return error.description }
        return "\(secret) is not valid TOML here (what was read is not shown: it is a secret); "
            + "write it as a quoted string of 32 hex digits, e.g. \(secret) = \"00112233445566778899aabbccddeeff\""
    }

    /// The advertisement `name` with `changes` applied (`bleadvctl set`), checked exactly as
    /// the config file is. Keys are those of ``ConfiguredAdvertisement/settings``; for a preset,
    /// its own keys are given without the preset's name (`major`, `temperature`).
    /// - Throws: ``ConfigError`` (with no file or line) naming the key: unknown, the wrong
    ///   type, out of range, or an advertisement that no longer fits, with the byte counts.
    public static func applying(
        _ changes: [String: ConfigValue], to configured: ConfiguredAdvertisement, name: String
    ) throws(ConfigError) -> ConfiguredAdvertisement {
        let path = ["advertisement", name]
        var settings = configured.settings
        var named: [String: String] = [:]
        for (key, value) in changes.sorted(by: { $0.key < $1.key }) {
            let setting = configured.settingKey(key)
            if let other = named.updateValue(key, forKey: setting) {
                throw ConfigError(file: "", line: nil, key: (path + [setting]).joined(separator: "."),
                                  message: "is given twice (as \(Untrusted.quoted(other)) and \(Untrusted.quoted(key))); give each key once")
            }
            // A table's entries are set one by one: a value for the whole table would be
            // dropped when the table is rebuilt from its entries.
            if let entry = settings.keys.sorted().first(where: { $0.hasPrefix(setting + ".") }) {
                throw ConfigError(file: "", line: nil, key: (path + [setting]).joined(separator: "."),
                                  message: "is a table; set one of its entries, e.g. \(entry)")
            }
            guard key != "enabled" else {
                throw ConfigError(file: "", line: nil, key: (path + [key]).joined(separator: "."),
                                  message: "is not a value; turn advertisements on and off with bleadvctl on and off")
            }
            guard !ConfiguredAdvertisement.secretKeys.contains(setting) && setting != "services" else {
                throw ConfigError(file: "", line: nil, key: (path + [key]).joined(separator: "."),
                                  message: "cannot be set at run time; change it in the config file and reload")
            }
            settings[setting] = value
        }
        var table = ConfiguredAdvertisement.table(of: settings)
        table["enabled"] = .bool(configured.enabled)
        let reader = Reader(file: "", lines: SourceLines(""), services: configured.services)
        return try reader.advertisement(table, path)
    }
}

/// Walks the parsed TOML, turning each value into its typed field or a located error.
struct Reader {
    let file: String
    let lines: SourceLines
    /// The config's services, by name: what an advertisement's `services` may name.
    var services: [String: BluetoothUUID] = [:]

    static let topKeys: Set<String> = ["adapter", "power_on", "advertisement", "service"]
    /// The keys every advertisement may have, preset or not.
    static let commonKeys: Set<String> = ["enabled", "services"]
    /// The raw fields: each key with how its value goes into the advertisement. The known keys
    /// are read off this list, so a key cannot be accepted without being read.
    static let fields: [Field] = [
        Field("type") { reader, value, path, ad throws(ConfigError) in
            let text = try reader.string(value, path)
            guard let kind = Advertisement.Kind(rawValue: text) else {
                throw reader.error(path, "\"\(text)\" is not a type; use \"peripheral\" or \"broadcast\"")
            }
            ad.kind = kind
        },
        Field("local_name") { reader, value, path, ad throws(ConfigError) in ad.localName = try reader.string(value, path) },
        Field("service_uuids") { reader, value, path, ad throws(ConfigError) in ad.serviceUUIDs = try reader.uuids(value, path) },
        Field("solicit_uuids") { reader, value, path, ad throws(ConfigError) in ad.solicitUUIDs = try reader.uuids(value, path) },
        Field("manufacturer_data") { reader, value, path, ad throws(ConfigError) in
            let table = try reader.table(value, path)
            for key in table.keys.sorted() {
                let id = try reader.integer(key, in: 0...0xFFFF, path + [key], what: "a company id")
                ad.manufacturerData.append(.init(companyID: UInt16(id), data: try reader.hex(table[key]!, path + [key])))
            }
        },
        Field("service_data") { reader, value, path, ad throws(ConfigError) in
            let table = try reader.table(value, path)
            for key in table.keys.sorted() {
                let uuid = try reader.parseUUID(key, path + [key])
                ad.serviceData.append(.init(uuid: uuid, data: try reader.hex(table[key]!, path + [key])))
            }
        },
        Field("data") { reader, value, path, ad throws(ConfigError) in
            let table = try reader.table(value, path)
            for key in table.keys.sorted() {
                let type = try reader.integer(key, in: 0...0xFF, path + [key], what: "an AD type")
                ad.data.append(.init(type: UInt8(type), data: try reader.hex(table[key]!, path + [key])))
            }
        },
        Field("appearance") { reader, value, path, ad throws(ConfigError) in ad.appearance = try reader.number(value, path) },
        Field("includes") { reader, value, path, ad throws(ConfigError) in
            for text in try reader.strings(value, path) {
                guard let include = Advertisement.Include(rawValue: text) else {
                    throw reader.error(path, "\"\(text)\" is not an include; use \"tx-power\", \"appearance\" or \"local-name\"")
                }
                ad.includes.insert(include)
            }
        },
        Field("discoverable") { reader, value, path, ad throws(ConfigError) in ad.discoverable = try reader.bool(value, path) },
        Field("discoverable_timeout") { reader, value, path, ad throws(ConfigError) in
            ad.discoverableTimeout = try reader.number(value, path)
        },
        Field("duration") { reader, value, path, ad throws(ConfigError) in ad.duration = try reader.number(value, path) },
        Field("timeout") { reader, value, path, ad throws(ConfigError) in ad.timeout = try reader.number(value, path) },
        Field("secondary_channel") { reader, value, path, ad throws(ConfigError) in
            let text = try reader.string(value, path)
            guard let channel = Advertisement.SecondaryChannel(rawValue: text) else {
                throw reader.error(path, "\"\(text)\" is not a channel; use \"1M\", \"2M\" or \"Coded\"")
            }
            ad.secondaryChannel = channel
        },
        Field("min_interval_ms") { reader, value, path, ad throws(ConfigError) in
            ad.minInterval = try reader.number(value, path, Advertisement.intervalRange)
        },
        Field("max_interval_ms") { reader, value, path, ad throws(ConfigError) in
            ad.maxInterval = try reader.number(value, path, Advertisement.intervalRange)
        },
        Field("tx_power") { reader, value, path, ad throws(ConfigError) in
            ad.txPower = try reader.number(value, path, Advertisement.txPowerRange)
        },
    ]
    static let fieldKeys = commonKeys.union(fields.map(\.key))
    /// The beacon presets, one row each: a preset is added here and nowhere else (its keys
    /// are checked, its fields read and its errors located from its row). `bthome` is read
    /// apart: its keys are BTHome's objects.
    static let presets: [String: Preset] = [
        "ibeacon": Preset(keys: ["uuid", "major", "minor", "measured_power"]) { table throws(ConfigError) in
            .iBeacon(uuid: try table.uuid("uuid"), major: try table.number("major"), minor: try table.number("minor"),
                     measuredPower: try table.number("measured_power"))
        },
        "altbeacon": Preset(keys: ["manufacturer_id", "beacon_id", "reference_rssi"]) { table throws(ConfigError) in
            .altBeacon(manufacturerID: try table.number("manufacturer_id"), beaconID: try table.bytes("beacon_id"),
                       referenceRSSI: try table.number("reference_rssi"))
        },
        "eddystone_uid": Preset(keys: ["namespace", "instance", "tx_power"]) { table throws(ConfigError) in
            .eddystoneUID(namespace: try table.bytes("namespace"), instance: try table.bytes("instance"), txPower: try table.number("tx_power"))
        },
        "eddystone_url": Preset(keys: ["url", "tx_power"]) { table throws(ConfigError) in
            .eddystoneURL(url: try table.string("url"), txPower: try table.number("tx_power"))
        },
    ]
    /// Each preset's keys, `bthome` included.
    static let presetKeys: [String: Set<String>] =
        presets.mapValues(\.keys).merging(["bthome": Set(BTHome.objects.map(\.name)).union(bthomeKeys)]) { $1 }
    /// The `bthome` preset's keys besides its measurements.
    static let bthomeKeys: Set<String> = ["trigger_based", "local_name", "encryption_key"]

    func error(_ path: [String], _ message: String) -> ConfigError {
        ConfigError(file: file, line: lines.line(of: path), key: path.joined(separator: "."), message: message)
    }

    func config(_ root: [String: TOMLNode]) throws(ConfigError) -> DaemonConfig {
        try checkKeys(root, allowed: Self.topKeys, at: [])
        var config = DaemonConfig()
        config.adapter = try root["adapter"].map { value throws(ConfigError) in try string(value, ["adapter"]) }
        if let adapter = config.adapter, !DaemonConfig.isAdapterName(adapter) {
            throw error(["adapter"], "\"\(adapter)\" is not an adapter name (expected e.g. hci0)")
        }
        config.powerOn = try root["power_on"].map { value throws(ConfigError) in try bool(value, ["power_on"]) } ?? true
        if let section = root["service"] { config.services = try services(section) }
        var reader = self
        reader.services = config.services.mapValues(\.service.uuid)
        guard let section = root["advertisement"] else { return config }
        let advertisements = try table(section, ["advertisement"])
        guard advertisements.count <= ConfigParser.maximumAdvertisements else {
            throw error(["advertisement"], "has \(advertisements.count) advertisements; a config file may define at most \(ConfigParser.maximumAdvertisements)")
        }
        for name in advertisements.keys.sorted() {
            let path = ["advertisement", name]
            try checkName(name, path)
            if config.services[name] != nil {
                throw error(path, "a service is named \(name) too; bleadvctl names one or the other, so give them different names")
            }
            config.advertisements[name] = try reader.advertisement(table(advertisements[name]!, path), path)
        }
        return config
    }

    func advertisement(_ entry: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> ConfiguredAdvertisement {
        let presets = entry.keys.filter { Self.presetKeys[$0] != nil }.sorted()
        let allowed = presets.isEmpty ? Self.fieldKeys.union(Self.presetKeys.keys) : Self.commonKeys.union(presets)
        if presets.count > 1 {
            throw error(path + [presets[1]], "only one preset per advertisement (also has \(presets[0]))")
        }
        for key in entry.keys.sorted() where !allowed.contains(key) {
            throw error(path + [key], presets.isEmpty
                ? "unknown key; known keys: \(Self.fieldKeys.union(Self.presetKeys.keys).sorted().joined(separator: ", "))"
                : "cannot be combined with the \(presets[0]) preset")
        }
        let enabled = try entry["enabled"].map { value throws(ConfigError) in try bool(value, path + ["enabled"]) } ?? true
        var advertisement: Advertisement
        var sensor: BTHome?
        if presets.first == "bthome" {
            let fields = try table(entry["bthome"]!, path + ["bthome"])
            sensor = try bthome(fields, path + ["bthome"])
            let localName = try fields["local_name"].map { value throws(ConfigError) in try string(value, path + ["bthome", "local_name"]) }
            do {
                advertisement = try sensor!.advertisement(localName: localName)
            } catch {
                throw self.error(path + ["bthome"], error.message)
            }
        } else if let preset = presets.first {
            advertisement = try self.preset(preset, table(entry[preset]!, path + [preset]), path + [preset])
        } else {
            advertisement = try fields(entry, path)
        }
        var offered: [String: BluetoothUUID] = [:]
        if let node = entry["services"] {
            for name in try strings(node, path + ["services"]) {
                guard let uuid = services[name] else {
                    throw error(path + ["services"], "no service named \(Untrusted.quoted(name, limit: 64)); "
                        + (services.isEmpty ? "define it in a [service.NAME] table" : "the services are \(services.keys.sorted().joined(separator: ", "))"))
                }
                offered[name] = uuid
                if !advertisement.serviceUUIDs.contains(uuid) { advertisement.serviceUUIDs.append(uuid) }
            }
            guard advertisement.kind == .peripheral else {
                throw error(path + ["services"], "a broadcast advertisement cannot be connected to; offer services from type = \"peripheral\"")
            }
        }
        let problems = advertisement.problems()
        guard problems.isEmpty else { throw error(path, problems.joined(separator: "; ")) }
        var settings = ConfiguredAdvertisement.settings(of: entry)
        settings["enabled"] = nil
        return ConfiguredAdvertisement(enabled: enabled, advertisement: advertisement, bthome: sensor, settings: settings, services: offered)
    }

    /// A `[advertisement.NAME.bthome]` table: measurements by object name, `trigger_based`.
    func bthome(_ fields: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> BTHome {
        try checkKeys(fields, allowed: Self.presetKeys["bthome"]!, at: path)
        var sensor = BTHome(values: [:])
        sensor.triggerBased = try fields["trigger_based"].map { value throws(ConfigError) in try bool(value, path + ["trigger_based"]) } ?? false
        if let value = fields["encryption_key"] {
            // Never echoed: the message says what is wrong without showing the key.
            let text = try string(value, path + ["encryption_key"])
            guard let key = BTHome.Key(hex: text) else {
                let scalars = Array(text.unicodeScalars)
                let notHex = scalars.firstIndex { !$0.properties.isASCIIHexDigit }
                throw error(path + ["encryption_key"], scalars.count == 32 && notHex != nil
                    ? "must be 32 hex digits (a 16-byte key); character \(notHex! + 1) is not a hex digit"
                    : "must be 32 hex digits (a 16-byte key); this one has \(scalars.count) characters")
            }
            if let reason = BTHome.encryptionUnavailable { throw error(path + ["encryption_key"], reason) }
            sensor.encryptionKey = key
        }
        for name in fields.keys.sorted() where !Self.bthomeKeys.contains(name) {
            let object = BTHome.objectsByName[name]!
            let value: Double
            if object.binary {
                value = try bool(fields[name]!, path + [name]) ? 1 : 0
            } else {
                guard let number = fields[name]!.double ?? fields[name]!.int.map(Double.init) else {
                    throw error(path + [name], "must be a number, not \(fields[name]!.type)")
                }
                value = number
            }
            if let problem = object.problem(with: value) { throw error(path + [name], problem) }
            sensor.values[name] = value
        }
        guard !sensor.values.isEmpty else {
            throw error(path, "has no measurement; give at least one, e.g. temperature = 21.5")
        }
        return sensor
    }

    func fields(_ entry: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> Advertisement {
        var ad = Advertisement()
        for field in Self.fields {
            guard let value = entry[field.key] else { continue }
            try field.apply(self, value, path + [field.key], &ad)
        }
        return ad
    }

    func preset(_ name: String, _ fields: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> Advertisement {
        try checkKeys(fields, allowed: Self.presetKeys[name]!, at: path)
        let beacon = try Self.presets[name]!.beacon(PresetTable(reader: self, name: name, fields: fields, path: path))
        do {
            return try beacon.advertisement()
        } catch {
            throw self.error(path, error.message)
        }
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

/// A beacon preset: the keys of its table, and how they make its ``Beacon``.
struct Preset: Sendable {
    let keys: Set<String>
    let beacon: @Sendable (PresetTable) throws(ConfigError) -> Beacon
}

/// A preset's table as its row reads it: every key is needed, and an error names its key.
struct PresetTable {
    let reader: Reader
    let name: String
    let fields: [String: TOMLNode]
    let path: [String]

    func value(_ key: String) throws(ConfigError) -> TOMLNode {
        guard let value = fields[key] else { throw reader.error(path + [key], "missing; the \(name) preset needs it") }
        return value
    }

    func string(_ key: String) throws(ConfigError) -> String {
        try reader.string(value(key), path + [key])
    }

    func uuid(_ key: String) throws(ConfigError) -> BluetoothUUID {
        try reader.parseUUID(string(key), path + [key])
    }

    func number<T: FixedWidthInteger>(_ key: String) throws(ConfigError) -> T {
        try reader.number(value(key), path + [key])
    }

    /// Hex bytes, of the length ``Beacon/byteLengths`` gives the field, if any.
    func bytes(_ key: String) throws(ConfigError) -> [UInt8] {
        let bytes = try reader.hex(value(key), path + [key])
        if let problem = Beacon.lengthProblem(name + "." + key, bytes) { throw reader.error(path + [key], problem) }
        return bytes
    }
}

/// One key of an advertisement's table and how its value goes into the advertisement.
struct Field: Sendable {
    typealias Apply = @Sendable (Reader, TOMLNode, [String], inout Advertisement) throws(ConfigError) -> Void

    let key: String
    let apply: Apply

    init(_ key: String, _ apply: @escaping Apply) {
        self.key = key
        self.apply = apply
    }
}

extension Character {
    /// Letters, digits, `-` and `_`: what names (of advertisements, of adapters) may use.
    var isNameCharacter: Bool {
        isASCII && (isLetter || isNumber || self == "-" || self == "_")
    }
}
