public import DBus
public import Peripheral

/// One central connected to an adapter, as `Centrals` reports it.
public struct CentralState: Hashable, Sendable {
    /// Its address.
    public var address: String
    /// The adapter it is connected to.
    public var adapter: String
    /// How long ago its link came up.
    public var sinceSeconds: Double
    /// Whether it is bonded with the adapter; nil when BlueZ did not say.
    public var bonded: Bool?
    /// The link's ATT MTU as BlueZ gave it with the central's last read or write; nil before one.
    public var mtu: Int?
    /// How long ago it last read, wrote or subscribed (its link's start before any).
    public var idleSeconds: Double
    /// The characteristics (`service.characteristic`) whose notifications its MTU cuts: a value
    /// sent was longer than MTU − 3 bytes.
    public var cut: [String]
    /// The characteristics (`service.characteristic`) it subscribed to: where BlueZ gives each
    /// central a notification socket (5.71 and later, characteristics that do not indicate),
    /// each one it subscribed to on this link (a bonded central's notifications that stayed on
    /// from a link before get none, and are not listed); otherwise BlueZ does not say which
    /// central subscribed, so those it subscribed to while it was the only central connected.
    public var subscribed: [String]
    /// The notifications it missed because its socket was full, on the subscriptions it holds
    /// now: values a later one replaced.
    public var dropped: Int

    /// A state.
    public init(
        address: String, adapter: String, sinceSeconds: Double, bonded: Bool?, mtu: Int?, idleSeconds: Double, cut: [String] = [],
        subscribed: [String] = [], dropped: Int = 0
    ) {
        self.address = address
        self.adapter = adapter
        self.sinceSeconds = sinceSeconds
        self.bonded = bonded
        self.mtu = mtu
        self.idleSeconds = idleSeconds
        self.cut = cut
        self.subscribed = subscribed
        self.dropped = dropped
    }

    /// As `Centrals` carries it: `adapter` s, `since_seconds` d, `idle_seconds` d, `cut` as,
    /// `subscribed` as, and when known `bonded` b, `mtu` q.
    public var dbusValue: DBusValue {
        var entries: [(String, DBusValue)] = [
            ("adapter", .string(adapter)), ("since_seconds", .double(sinceSeconds)), ("idle_seconds", .double(idleSeconds)),
            ("cut", .strings(cut)), ("subscribed", .strings(subscribed)), ("dropped", .uint32(UInt32(clamping: dropped))),
        ]
        if let bonded { entries.append(("bonded", .boolean(bonded))) }
        if let mtu { entries.append(("mtu", .uint16(UInt16(clamping: mtu)))) }
        return .variantDictionary(Dictionary(uniqueKeysWithValues: entries))
    }

    /// The state a `Centrals` entry carries; nil when it is malformed.
    public init?(address: String, _ value: DBusValue) {
        guard let entries = value.variantDictionary, let adapter = entries["adapter"]?.string,
              let since = entries["since_seconds"]?.double, let idle = entries["idle_seconds"]?.double else { return nil }
        self.init(
            address: address, adapter: adapter, sinceSeconds: since, bonded: entries["bonded"]?.boolean,
            mtu: entries["mtu"]?.uint16.map(Int.init), idleSeconds: idle, cut: entries["cut"]?.stringArray ?? [],
            subscribed: entries["subscribed"]?.stringArray ?? [], dropped: Int(entries["dropped"]?.uint32 ?? 0))
    }
}

/// The control API's centrals part, which the centrals component serves: who is connected, and
/// ending a link.
public protocol CentralsControl: Sendable {
    /// The centrals connected now, by address.
    func centrals() async -> [CentralState]
    /// Ends the link with `central`.
    /// - Throws: `unknownName` when no such central is connected.
    func disconnect(_ central: String) async throws(PeripheralError)
}
