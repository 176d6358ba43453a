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
    /// `Adapter1.Alias`: the name centrals are shown once connected (GAP's Device Name), the
    /// system's name when no alias is set; nil when BlueZ did not say.
    public var alias: String?
    /// `Adapter1.Name`: the system's name for it (the host name, by BlueZ's hostname plugin).
    public var systemName: String?
    /// Which BlueZ answers for the adapter, as far as its properties tell.
    public var release: StackRelease

    /// Capabilities.
    public init(
        name: String, address: String? = nil, powered: Bool = true, freeInstances: Int = 1, activeInstances: Int = 0,
        includes: Set<Advertisement.Include> = Set(Advertisement.Include.allCases),
        secondaryChannels: Set<Advertisement.SecondaryChannel> = [], maxAdvertisingLength: Int? = nil,
        txPowerRange: ClosedRange<Int16>? = nil, actsOnParameters: Bool = true, alias: String? = nil, systemName: String? = nil,
        release: StackRelease = .scanResponseFields
    ) {
        self.release = release
        self.alias = alias
        self.systemName = systemName
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

/// The BlueZ release behind an adapter, as far as the bus tells. bluetoothd does not publish
/// its version; the properties it added do: `Adapter1.Manufacturer` came with 5.71 (and with
/// it advertising data past 31 bytes, from 5.69), `Adapter1.Connectable` with 5.79, one release
/// before the scan response's fields (5.80). 5.79 alone is taken for 5.80 (Ubuntu 25.04's, out
/// of support since January 2026).
public enum StackRelease: Int, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Before 5.71 (Debian 12's 5.66, Ubuntu 22.04's 5.64): advertising data of 31 bytes at most,
    /// no scan response fields.
    case before571 = 0
    /// 5.71 to 5.78 (Ubuntu 24.04's 5.72): advertising data up to the adapter's `MaxAdvLen`, no
    /// scan response fields.
    case longData = 571
    /// 5.79 or later (Debian 13's 5.82): the scan response's fields too.
    case scanResponseFields = 579

    /// From an adapter's `Adapter1` property names.
    public init(adapterProperties names: some Collection<String>) {
        self = names.contains("Connectable") ? .scanResponseFields : names.contains("Manufacturer") ? .longData : .before571
    }

    /// Orders releases, oldest first.
    public static func < (lhs: StackRelease, rhs: StackRelease) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `older than 5.71`, `5.71 to 5.78`, `5.80 or later`.
    public var description: String {
        switch self {
        case .before571: "older than 5.71"
        case .longData: "5.71 to 5.78"
        case .scanResponseFields: "5.80 or later"
        }
    }
}

/// The adapter a config names: by its name (`hci0`), which the kernel gives in the order it
/// finds controllers (a USB dongle can come up as hci0 one boot and hci1 the next), or by its
/// address, which stays with the controller.
public enum AdapterChoice: Hashable, Sendable, CustomStringConvertible {
    /// The adapter of this name.
    case name(String)
    /// The adapter with this address (upper case, as BlueZ writes `Adapter1.Address`).
    case address(String)

    /// `text` as an address when it is one (``Bond/isAddress(_:)``: six pairs of hex digits with
    /// colons, any case), else as a name.
    public init(_ text: String) {
        self = Bond.isAddress(text) ? .address(text.uppercased()) : .name(text)
    }

    /// Whether `adapter` is the one chosen.
    public func matches(_ adapter: AdapterCapabilities) -> Bool {
        switch self {
        case .name(let name): adapter.name == name
        case .address(let address): adapter.address?.uppercased() == address
        }
    }

    /// Whether the adapter named `name` may be the one chosen: by name, only that one; by
    /// address, any, until its address is read.
    public func mayBe(_ name: String) -> Bool {
        if case .name(let chosen) = self { chosen == name } else { true }
    }

    /// The name, when the choice is by name.
    public var name: String? {
        if case .name(let name) = self { name } else { nil }
    }

    /// The name or the address, as the config gave it.
    public var description: String {
        switch self {
        case .name(let name): name
        case .address(let address): address
        }
    }
}
