import Peripheral
import TOMLKit

/// An `[advertisement.NAME]` table: its raw fields, beacon presets and BTHome sensor, each key
/// read off one list.
extension Reader {
    /// The keys every advertisement may have, preset or not.
    static let commonKeys: Set<String> = ["enabled", "services", "scan_response", "priority"]
    /// The keys of an `[advertisement.NAME.scan_response]` table: the raw fields a scan
    /// response carries besides the name, read as the advertising data's are.
    static let scanResponseKeys: Set<String> = ["service_uuids", "solicit_uuids", "manufacturer_data", "service_data", "data"]
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
        // Each key may be left out: a voltage or temperature not measured is sent as the spec
        // says (0 mV, -128 °C), and the counters are the daemon's.
        "eddystone_tlm": Preset(keys: ["battery_mv", "temperature", "update_seconds"]) { table throws(ConfigError) in
            .eddystoneTLM(EddystoneTLM(
                batteryMillivolts: table.has("battery_mv") ? try table.number("battery_mv", EddystoneTLM.batteryRange) : nil,
                temperature: table.has("temperature") ? try table.decimal("temperature", EddystoneTLM.temperatureRange, unit: "°C") : nil))
        },
    ]
    /// Each preset's keys, `bthome` included.
    static let presetKeys: [String: Set<String>] =
        presets.mapValues(\.keys).merging(["bthome": Set(BTHome.objects.map(\.name)).union(bthomeKeys)]) { $1 }
    /// The `bthome` preset's keys besides its measurements.
    static let bthomeKeys: Set<String> = ["trigger_based", "local_name", "encryption_key", "buttons", "dimmers", "event_seconds"]
    /// How long an event's packets may stay on air (`event_seconds`; 1 s unless given).
    static let eventSeconds: ClosedRange<Double> = 0.1...10.0
    /// How often a TLM frame's counters are brought up to date on air (`update_seconds`): on a
    /// controller without extended advertising, the kernel gives the advertisement updated a
    /// new turn (2 s), so an update every 2 s kept a UID beside it off air (the HCI record of
    /// scenario 41 on Debian 13); 5 s leaves the others their turns.
    static let telemetrySeconds: ClosedRange<Double> = 5...3600
    /// Unless the config says.
    static let telemetryEvery: Duration = .seconds(10)

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
        var telemetry: ConfiguredAdvertisement.Telemetry?
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
            let fields = try table(entry[preset]!, path + [preset])
            let beacon: Beacon
            (advertisement, beacon) = try self.preset(preset, fields, path + [preset])
            if case .eddystoneTLM(let frame) = beacon {
                let every = try fields["update_seconds"].map { value throws(ConfigError) in
                    try seconds(value, path + [preset, "update_seconds"], Self.telemetrySeconds)
                }
                telemetry = .init(frame: frame, every: every ?? Self.telemetryEvery)
            }
        } else {
            advertisement = try fields(entry, path)
        }
        if let node = entry["scan_response"] {
            advertisement.scanResponse = try scanResponse(node, path + ["scan_response"])
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
        guard problems.isEmpty else { throw error(path, (problems + objectCount(sensor)).joined(separator: "; ")) }
        if let sensor, sensor.buttons + sensor.dimmers > 0 {
            // An event's packet is the longest: every button and dimmer has its object in it.
            var fullest = advertisement
            var eventful = sensor
            eventful.event = sensor.fullestEvent
            if let data = try? eventful.serviceData() { fullest.serviceData = [.init(uuid: BTHome.serviceUUID, data: data)] }
            let problems = fullest.problems()
            guard problems.isEmpty else {
                throw error(path, "with an event, " + (problems + objectCount(sensor)).joined(separator: "; ")
                    + " (and \(sensor.buttons) button(s), \(sensor.dimmers) dimmer(s): 2 and 3 bytes each)")
            }
        }
        var settings = ConfiguredAdvertisement.settings(of: entry)
        settings["enabled"] = nil
        var configured = ConfiguredAdvertisement(
            enabled: enabled, advertisement: advertisement, bthome: sensor, telemetry: telemetry, settings: settings, services: offered)
        if let node = entry["priority"] { configured.priority = try number(node, path + ["priority"], ConfiguredAdvertisement.priorityRange) }
        return configured
    }

    /// A `[advertisement.NAME.bthome]` table: measurements by object name, each a value or an
    /// array of values of one kind (`temperature = [21.5, 19.0]`, sent in that order),
    /// `trigger_based`.
    func bthome(_ fields: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> BTHome {
        try checkKeys(fields, allowed: Self.presetKeys["bthome"]!, at: path)
        var sensor = BTHome(values: [String: [Double]]())
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
        for kind in ["buttons", "dimmers"] {
            guard let value = fields[kind] else { continue }
            let count: Int = try number(value, path + [kind], 0...BTHome.maxEventObjects)
            if kind == "buttons" { sensor.buttons = count } else { sensor.dimmers = count }
        }
        if let value = fields["event_seconds"] {
            guard sensor.buttons + sensor.dimmers > 0 else {
                throw error(path + ["event_seconds"], "the sensor sends no events; declare buttons = N or dimmers = N")
            }
            sensor.eventBurst = try seconds(value, path + ["event_seconds"], Self.eventSeconds)
        }
        for name in fields.keys.sorted() where !Self.bthomeKeys.contains(name) {
            let object = BTHome.objectsByName[name]!
            let given = fields[name]!
            let elements: [TOMLNode]
            if case .array(let array) = given {
                guard !array.isEmpty else {
                    throw error(path + [name], "is an empty array; give one value or several, e.g. \(name) = \(object.binary ? "[true, false]" : "[21.5, 19.0]")")
                }
                elements = array
            } else {
                elements = [given]
            }
            var values: [Double] = []
            for (index, element) in elements.enumerated() {
                // One of several is named by its place: "value 2 of 3 is 400; ...".
                let which = given.type == "array" ? "value \(index + 1) of \(elements.count) " : ""
                let value: Double
                if object.binary {
                    guard let flag = element.bool else {
                        throw error(path + [name], "\(which)must be true or false, not \(element.type)")
                    }
                    value = flag ? 1 : 0
                } else {
                    guard let number = element.double ?? element.int.map(Double.init) else {
                        throw error(path + [name], "\(which)must be a number, not \(element.type)")
                    }
                    value = number
                }
                if let problem = object.problem(with: value) { throw error(path + [name], which + problem) }
                values.append(value)
            }
            sensor.values[name] = values
        }
        guard !sensor.values.isEmpty || sensor.buttons + sensor.dimmers > 0 else {
            throw error(path, "has no measurement; give at least one, e.g. temperature = 21.5, or buttons = 1 for a button")
        }
        return sensor
    }

    /// For the refusal of a sensor whose measurements repeat: how many objects it sends, and of
    /// which kinds (`the sensor sends 9 objects: battery, temperature ×8`).
    func objectCount(_ sensor: BTHome?) -> [String] {
        guard let sensor, sensor.values.values.contains(where: { $0.count > 1 }) else { return [] }
        let names = sensor.values.keys.sorted { (BTHome.objectsByName[$0]?.id ?? .max) < (BTHome.objectsByName[$1]?.id ?? .max) }
        let kinds = names.map { name in sensor.values[name]!.count > 1 ? "\(name) ×\(sensor.values[name]!.count)" : name }
        return ["the sensor sends \(sensor.values.values.map(\.count).reduce(0, +)) objects: \(kinds.joined(separator: ", "))"]
    }

    /// A `[advertisement.NAME.scan_response]` table, each key read by the advertising data's
    /// own field of that name.
    func scanResponse(_ node: TOMLNode, _ path: [String]) throws(ConfigError) -> Advertisement.ScanResponse {
        let entry = try table(node, path)
        try checkKeys(entry, allowed: Self.scanResponseKeys, at: path)
        let read = try fields(entry, path)
        return Advertisement.ScanResponse(
            serviceUUIDs: read.serviceUUIDs, solicitUUIDs: read.solicitUUIDs, manufacturerData: read.manufacturerData,
            serviceData: read.serviceData, data: read.data)
    }

    func fields(_ entry: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> Advertisement {
        var ad = Advertisement()
        for field in Self.fields {
            guard let value = entry[field.key] else { continue }
            try field.apply(self, value, path + [field.key], &ad)
        }
        return ad
    }

    /// A beacon preset's advertisement, and the beacon it was made of.
    func preset(_ name: String, _ fields: [String: TOMLNode], _ path: [String]) throws(ConfigError) -> (Advertisement, Beacon) {
        try checkKeys(fields, allowed: Self.presetKeys[name]!, at: path)
        let beacon = try Self.presets[name]!.beacon(PresetTable(reader: self, name: name, fields: fields, path: path))
        do {
            return (try beacon.advertisement(), beacon)
        } catch {
            throw self.error(path, error.message)
        }
    }
}

/// A beacon preset: the keys of its table, and how they make its ``Beacon``.
struct Preset: Sendable {
    let keys: Set<String>
    let beacon: @Sendable (PresetTable) throws(ConfigError) -> Beacon
}

/// A preset's table as its row reads it: every key is needed unless the row asks ``has(_:)``
/// first, and an error names its key.
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

    /// Whether the table gives `key` (for a key the preset may do without).
    func has(_ key: String) -> Bool { fields[key] != nil }

    func number<T: FixedWidthInteger>(_ key: String, _ range: ClosedRange<T> = T.min...T.max) throws(ConfigError) -> T {
        try reader.number(value(key), path + [key], range)
    }

    /// A number, whole or not, within `range`.
    func decimal(_ key: String, _ range: ClosedRange<Double>, unit: String) throws(ConfigError) -> Double {
        let number = try reader.decimal(value(key), path + [key])
        guard range.contains(number) else {
            throw reader.error(path + [key], "is \(GATTFormat.shown(number)) \(unit); it must be between \(GATTFormat.shown(range.lowerBound)) and \(GATTFormat.shown(range.upperBound)) \(unit)")
        }
        return number
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
