/// What an adapter can do for advertising, as BlueZ reports it on `LEAdvertisingManager1`.
public struct AdapterCapabilities: Hashable, Sendable {
    /// The adapter's name, e.g. `hci0`.
    public var name: String
    /// `Adapter1.Address`, e.g. `54:48:E6:8F:80:A5`: the address receivers see (encrypted
    /// BTHome needs it); nil when BlueZ did not say.
    public var address: String?
    /// Whether the adapter is powered.
    public var powered: Bool
    /// `SupportedInstances`: advertising slots still free (BlueZ counts free, not total).
    public var freeInstances: Int
    /// `ActiveInstances`: advertising slots in use.
    public var activeInstances: Int
    /// `SupportedIncludes`.
    public var includes: Set<Advertisement.Include>
    /// `SupportedSecondaryChannels`.
    public var secondaryChannels: Set<Advertisement.SecondaryChannel>
    /// `SupportedCapabilities["MaxAdvLen"]` where BlueZ reports it (extended advertising).
    public var maxAdvertisingLength: Int?
    /// `SupportedCapabilities["MinTxPower"]...["MaxTxPower"]` in dBm, where BlueZ reports them.
    public var txPowerRange: ClosedRange<Int16>?
    /// Whether BlueZ acts on an advertisement's `MinInterval`, `MaxInterval` and `TxPower`.
    /// BlueZ before 5.77 accepts them but acts on them only when bluetoothd runs with
    /// `--experimental` (-E); it shows `SupportedCapabilities` under the same condition, so its
    /// presence is the answer.
    public var actsOnParameters: Bool

    /// Capabilities.
    public init(
        name: String, address: String? = nil, powered: Bool = true, freeInstances: Int = 1, activeInstances: Int = 0,
        includes: Set<Advertisement.Include> = Set(Advertisement.Include.allCases),
        secondaryChannels: Set<Advertisement.SecondaryChannel> = [], maxAdvertisingLength: Int? = nil,
        txPowerRange: ClosedRange<Int16>? = nil, actsOnParameters: Bool = true
    ) {
        self.name = name
        self.address = address
        self.powered = powered
        self.freeInstances = freeInstances
        self.activeInstances = activeInstances
        self.includes = includes
        self.secondaryChannels = secondaryChannels
        self.maxAdvertisingLength = maxAdvertisingLength
        self.txPowerRange = txPowerRange
        self.actsOnParameters = actsOnParameters
    }
}
