public import Peripheral

/// What `/etc/bleadvd/bleadvd.toml` says: which adapter, and the advertisements by name.
public struct DaemonConfig: Hashable, Sendable {
    /// The default config file.
    public static let defaultPath = "/etc/bleadvd/bleadvd.toml"

    /// The adapter to use (`hci0`); nil for the first that can advertise.
    public var adapter: String?
    /// Whether to power the adapter on when it is off.
    public var powerOn: Bool
    /// The name centrals are shown once connected (the adapter's alias); nil leaves it alone.
    public var alias: String?
    /// The advertisements, by the name `bleadvctl` uses.
    public var advertisements: [String: ConfiguredAdvertisement]
    /// The GATT services, by the name `bleadvctl set` uses.
    public var services: [String: ConfiguredService]
    /// How centrals pair (`[pairing]`).
    public var pairing = PairingConfig()
    /// How many centrals may connect, and for how long idle (`[centrals]`).
    public var centrals = CentralsConfig()
    /// Improv Wi-Fi (`[improv]`); nil when the file does not offer it.
    public var improv: ImprovConfig?
    /// How the adapter's slots are shared (`[slots]`).
    public var slots = SlotsConfig()

    /// A config.
    public init(
        adapter: String? = nil, powerOn: Bool = true, advertisements: [String: ConfiguredAdvertisement] = [:],
        services: [String: ConfiguredService] = [:]
    ) {
        self.adapter = adapter
        self.powerOn = powerOn
        self.advertisements = advertisements
        self.services = services
    }

    /// The names of the advertisements, sorted.
    public var names: [String] { advertisements.keys.sorted() }

    /// Whether `text` can choose an adapter: its name (``isAdapterName(_:)``) or its address
    /// (`Bond.isAddress(_:)`, Peripheral).
    public static func isAdapter(_ text: String) -> Bool {
        isAdapterName(text) || Bond.isAddress(text)
    }

    /// What `adapter` and `--adapter` say when they are neither.
    public static func notAnAdapter(_ text: String) -> String {
        "\(Untrusted.quoted(text)) is neither an adapter name (hci0) nor an address (00:1A:7D:DA:71:13)"
    }

    /// The longest alias: HCI's local name, 248 bytes.
    public static let maximumAliasLength = 248

    /// Whether `name` can name an adapter (`hci0`): 1 to 64 letters, digits, `-` and `_`, the
    /// rule for every name in the file.
    public static func isAdapterName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && name.allSatisfy(\.isNameCharacter)
    }
}

/// The `[pairing]` table: how centrals bond with this box, so that characteristics that need
/// an encrypted link open to them.
public struct PairingConfig: Hashable, Sendable {
    /// The method; nil for `off` (no agent: no new bonds, those made already keep working).
    /// Passkey unless the file asks otherwise: just works lets any central in range bond while
    /// a window is open, so it is never the default.
    public var method: PairingMethod? = .passkey
    /// How long `bleadvctl pair` opens a window when it is not told.
    public var window: Duration = .seconds(120)
    /// How many pairing requests one window takes from each central (by address); its later
    /// ones are refused. Another central's requests cost it none: a stranger's wrong codes
    /// leave the owner's central its attempts.
    public var attempts = 3

    /// The window's allowed length, in seconds.
    public static let windowRange = 1...3600
    /// The allowed number of attempts per central and window.
    public static let attemptsRange = 1...100

    /// The default: passkey, 120-second windows, 3 attempts for each central in each.
    public init(method: PairingMethod? = .passkey, window: Duration = .seconds(120), attempts: Int = 3) {
        self.method = method
        self.window = window
        self.attempts = attempts
    }
}

/// One `[advertisement.NAME]` table.
public struct ConfiguredAdvertisement: Hashable, Sendable {
    /// Whether it goes on air when the daemon starts.
    public var enabled: Bool
    /// The advertisement, validated.
    public var advertisement: Advertisement
    /// The BTHome sensor, for a `bthome` preset: its values change with `bleadvctl set`, and its
    /// packet id with each change.
    public var bthome: BTHome?
    /// The telemetry, for an `eddystone_tlm` preset: its counters are the daemon's.
    public var telemetry: Telemetry?
    /// What the table says, key by key (`local_name`, `manufacturer_data.0xFFFF`,
    /// `ibeacon.major`, `bthome.temperature`): what `bleadvctl set` changes.
    public var settings: [String: ConfigValue]
    /// The services it offers (its `services` key), by name: their UUIDs are in its data.
    public var services: [String: BluetoothUUID]
    /// Its priority for the adapter's slots (`priority`, 0 unless given): when advertisements
    /// outnumber the slots, higher ones stay on air and lower ones take turns.
    public var priority = 0

    /// What `priority` may be.
    public static let priorityRange = 0...100

    /// Settings that are never shown (status, logs) nor set at run time.
    public static let secretKeys: Set<String> = ["bthome.encryption_key"]

    /// ``settings`` without the secret ones: what `bleadvctl status` shows.
    public var shownSettings: [String: ConfigValue] {
        settings.filter { !Self.secretKeys.contains($0.key) }
    }

    /// Whether it is an encrypted BTHome sensor: its readings are for those who hold its key.
    public var isEncrypted: Bool { bthome?.encryptionKey != nil }

    /// ``shownSettings`` that a local user outside the trusted set may see (status, the
    /// broadcasts): an encrypted sensor's readings (`bthome.*`) left out.
    public var publicSettings: [String: ConfigValue] {
        isEncrypted ? shownSettings.filter { !$0.key.hasPrefix("bthome.") } : shownSettings
    }

    /// An `eddystone_tlm` preset's telemetry: the frame as the table gives it (its counters at
    /// zero) and how often the daemon brings the counters on air up to date.
    public struct Telemetry: Hashable, Sendable {
        /// The frame.
        public var frame: EddystoneTLM
        /// How often its counters are brought up to date (`update_seconds`).
        public var every: Duration

        /// Telemetry.
        public init(frame: EddystoneTLM, every: Duration) {
            self.frame = frame
            self.every = every
        }
    }

    /// An entry.
    public init(
        enabled: Bool = true, advertisement: Advertisement, bthome: BTHome? = nil, telemetry: Telemetry? = nil,
        settings: [String: ConfigValue] = [:], services: [String: BluetoothUUID] = [:]
    ) {
        self.telemetry = telemetry
        self.services = services
        self.enabled = enabled
        self.advertisement = advertisement
        self.bthome = bthome
        self.settings = settings
    }

    /// The advertisement with the BTHome packet id set to `packetID` (for a `bthome` preset), or
    /// with `counters` in its TLM frame (for an `eddystone_tlm` preset; nil: as configured);
    /// any other advertisement is returned as it is.
    public func advertisement(packetID: UInt8, counters: EddystoneTLM.Counters? = nil) throws(PeripheralError) -> Advertisement {
        if var frame = telemetry?.frame {
            if let counters { frame.counters = counters }
            var ad = advertisement
            ad.serviceData = [.init(uuid: Beacon.eddystoneService, data: frame.frame)]
            return ad
        }
        guard var sensor = bthome else { return advertisement }
        sensor.packetID = packetID
        var ad = advertisement
        ad.serviceData = [.init(uuid: BTHome.serviceUUID, data: try sensor.serviceData())]
        return ad
    }
}

/// A problem in a config file: `FILE:LINE: KEY: what is wrong`.
public struct ConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// The line the problem is on, when known.
    public var line: Int?
    /// The dotted key, e.g. `advertisement.door.ibeacon.major`; empty for the file as a whole.
    public var key: String
    /// What is wrong.
    public var message: String

    /// An error.
    public init(file: String, line: Int?, key: String, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    /// `FILE:LINE: KEY: message`; `KEY: message` when there is no file (a value set at run time).
    /// The key is escaped and cut (`Untrusted`): it comes from the file or a caller.
    public var description: String {
        let place = line.map { "\(file):\($0)" } ?? file
        let what = key.isEmpty ? message : "\(Untrusted.shown(key, limit: 200)): \(message)"
        return place.isEmpty ? what : "\(place): \(what)"
    }
}

extension DaemonConfig {
    /// How a feature's table is read into the config: by a reader beside its `*Config`.
    typealias TableReader = @Sendable (Reader, [String: TOMLNode], inout DaemonConfig) throws(ConfigError) -> Void

    /// The tables features add to the file, each with how it is read into its field: a
    /// feature's table is its field above and a line here, nothing in the reader.
    static let featureTables: [(key: String, read: TableReader)] = [
        ("pairing", { reader, fields, config throws(ConfigError) in config.pairing = try reader.pairing(fields) }),
        ("centrals", { reader, fields, config throws(ConfigError) in config.centrals = try reader.centrals(fields) }),
        ("slots", { reader, fields, config throws(ConfigError) in config.slots = try reader.slots(fields) }),
    ]
}
