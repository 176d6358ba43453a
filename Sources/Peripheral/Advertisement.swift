/// One advertisement, as BlueZ's `org.bluez.LEAdvertisement1` describes it (BlueZ 5.66): every
/// property is here, unset ones are `nil` or empty. A value type: build it, check it with
/// ``validate(for:)``, see its bytes with ``AdvertisingPayload``.
public struct Advertisement: Hashable, Sendable {
    /// `Type`: whether centrals may connect.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Non-connectable; BlueZ's default when Type is missing.
        case broadcast
        /// Connectable.
        case peripheral
    }

    /// What BlueZ adds from the adapter itself (`Includes`).
    public enum Include: String, Sendable, Hashable, CaseIterable, Comparable {
        /// The adapter's TX power, in the advertising data.
        case txPower = "tx-power"
        /// The adapter's appearance.
        case appearance
        /// The adapter's name, in the scan response.
        case localName = "local-name"

        /// Orders includes by name, for stable output.
        public static func < (lhs: Include, rhs: Include) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// `SecondaryChannel`: the PHY of extended advertising's secondary channel.
    public enum SecondaryChannel: String, Sendable, Hashable, CaseIterable {
        /// LE 1M.
        case oneM = "1M"
        /// LE 2M.
        case twoM = "2M"
        /// LE Coded.
        case coded = "Coded"
    }

    /// Manufacturer-specific data for one company identifier.
    public struct ManufacturerData: Hashable, Sendable {
        /// The Bluetooth SIG company identifier, e.g. 0x004C (Apple).
        public var companyID: UInt16
        /// The bytes after the company identifier.
        public var data: [UInt8]

        /// An entry.
        public init(companyID: UInt16, data: [UInt8]) {
            self.companyID = companyID
            self.data = data
        }
    }

    /// Data for one service UUID.
    public struct ServiceData: Hashable, Sendable {
        /// The service.
        public var uuid: BluetoothUUID
        /// The bytes after the UUID.
        public var data: [UInt8]

        /// An entry.
        public init(uuid: BluetoothUUID, data: [UInt8]) {
            self.uuid = uuid
            self.data = data
        }
    }

    /// A raw AD structure (`Data`, experimental in BlueZ): an AD type and its bytes.
    public struct RawData: Hashable, Sendable {
        /// The AD type, e.g. 0x26.
        public var type: UInt8
        /// The bytes.
        public var data: [UInt8]

        /// An entry.
        public init(type: UInt8, data: [UInt8]) {
            self.type = type
            self.data = data
        }
    }

    /// What a scanner gets when it asks (the scan response), besides the name: BlueZ 5.80's
    /// `ScanResponseServiceUUIDs`, `ScanResponseSolicitUUIDs`, `ScanResponseManufacturerData`,
    /// `ScanResponseServiceData` and `ScanResponseData`. The name (``localName``, or includes
    /// `local-name`) goes in the scan response too, after these and before the raw data.
    public struct ScanResponse: Hashable, Sendable {
        /// `ScanResponseServiceUUIDs`, in order.
        public var serviceUUIDs: [BluetoothUUID]
        /// `ScanResponseSolicitUUIDs`, in order.
        public var solicitUUIDs: [BluetoothUUID]
        /// `ScanResponseManufacturerData`, in order.
        public var manufacturerData: [ManufacturerData]
        /// `ScanResponseServiceData`, in order.
        public var serviceData: [ServiceData]
        /// `ScanResponseData`, in order.
        public var data: [RawData]

        /// A scan response; every field left out is empty.
        public init(
            serviceUUIDs: [BluetoothUUID] = [], solicitUUIDs: [BluetoothUUID] = [], manufacturerData: [ManufacturerData] = [],
            serviceData: [ServiceData] = [], data: [RawData] = []
        ) {
            self.serviceUUIDs = serviceUUIDs
            self.solicitUUIDs = solicitUUIDs
            self.manufacturerData = manufacturerData
            self.serviceData = serviceData
            self.data = data
        }

        /// Whether no field is given.
        public var isEmpty: Bool {
            serviceUUIDs.isEmpty && solicitUUIDs.isEmpty && manufacturerData.isEmpty && serviceData.isEmpty && data.isEmpty
        }
    }

    /// `Type`.
    public var kind: Kind
    /// `ServiceUUIDs`, in order.
    public var serviceUUIDs: [BluetoothUUID]
    /// `SolicitUUIDs`, in order.
    public var solicitUUIDs: [BluetoothUUID]
    /// `ManufacturerData`, in order.
    public var manufacturerData: [ManufacturerData]
    /// `ServiceData`, in order.
    public var serviceData: [ServiceData]
    /// `Data`, in order.
    public var data: [RawData]
    /// The scan response's fields besides the name (BlueZ 5.80 and later).
    public var scanResponse: ScanResponse
    /// `Discoverable`.
    public var discoverable: Bool?
    /// `DiscoverableTimeout`, in seconds.
    public var discoverableTimeout: UInt16?
    /// `Includes`.
    public var includes: Set<Include>
    /// `LocalName`.
    public var localName: String?
    /// `Appearance`.
    public var appearance: UInt16?
    /// `Duration`, in seconds: how long this advertisement takes its turn when rotating.
    public var duration: UInt16?
    /// `Timeout`, in seconds: BlueZ removes the advertisement after it.
    public var timeout: UInt16?
    /// `SecondaryChannel`.
    public var secondaryChannel: SecondaryChannel?
    /// `MinInterval`, in milliseconds.
    public var minInterval: UInt32?
    /// `MaxInterval`, in milliseconds.
    public var maxInterval: UInt32?
    /// `TxPower`, in dBm: the power requested.
    public var txPower: Int16?
    /// Encrypted BTHome: the 0xFCD2 service data is encrypted with this key each time it goes
    /// to BlueZ (``sealed(address:counter:)``); nil for an advertisement sent as it is.
    public var bthomeKey: BTHome.Key?

    /// An advertisement; every property left out is unset.
    public init(
        kind: Kind = .peripheral, serviceUUIDs: [BluetoothUUID] = [], solicitUUIDs: [BluetoothUUID] = [],
        manufacturerData: [ManufacturerData] = [], serviceData: [ServiceData] = [], data: [RawData] = [],
        scanResponse: ScanResponse = ScanResponse(), discoverable: Bool? = nil, discoverableTimeout: UInt16? = nil, includes: Set<Include> = [],
        localName: String? = nil, appearance: UInt16? = nil, duration: UInt16? = nil, timeout: UInt16? = nil,
        secondaryChannel: SecondaryChannel? = nil, minInterval: UInt32? = nil, maxInterval: UInt32? = nil,
        txPower: Int16? = nil
    ) {
        self.kind = kind
        self.serviceUUIDs = serviceUUIDs
        self.solicitUUIDs = solicitUUIDs
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.data = data
        self.scanResponse = scanResponse
        self.discoverable = discoverable
        self.discoverableTimeout = discoverableTimeout
        self.includes = includes
        self.localName = localName
        self.appearance = appearance
        self.duration = duration
        self.timeout = timeout
        self.secondaryChannel = secondaryChannel
        self.minInterval = minInterval
        self.maxInterval = maxInterval
        self.txPower = txPower
    }
}
