public import Peripheral

/// The control interface's signals, each declared once (``ControlSignal``): the list the
/// service exports and the contract's tests read, in the order the interface lists them.
extension ControlAPI {
    /// Every signal, in the order the interface lists them.
    public static let signals: [any ControlSignal.Type] = [
        StateChanged.self, ValuesChanged.self, Written.self, Pairing.self, Connected.self, Disconnected.self, LinkChanged.self,
        Subscription.self,
    ]

    /// `StateChanged(s name, s state)`, once per change; changes in quick succession are
    /// coalesced, so a listener may miss a passing state but always gets the latest.
    public struct StateChanged: ControlSignal {
        /// Its member name.
        public static let name = "StateChanged"
        /// Its arguments, in the order it carries them.
        public static let fields: [ControlField<Self>] = [.init("name", \.name), .init("state", \.state)]
        /// The advertisement's or service's name.
        public var name = ""
        /// Its state (``AdvertisementState/State``'s raw value: `on`, `off`, ...).
        public var state = ""

        /// A blank payload.
        public init() {}
        /// `name` is now in `state`.
        public init(name: String, state: String) {
            self.name = name
            self.state = state
        }
    }

    /// `ValuesChanged(s name, a{ss} values)` when changed values went to BlueZ: every key of
    /// the advertisement with its value as the config file would write it; a service's
    /// secured characteristics only in the copy sent to each subscriber (`Subscribe`).
    public struct ValuesChanged: ControlSignal {
        /// Its member name.
        public static let name = "ValuesChanged"
        /// Its arguments, in the order it carries them.
        public static let fields: [ControlField<Self>] = [.init("name", \.name), .init("values", \.values)]
        /// The advertisement's or service's name.
        public var name = ""
        /// Each key with its value as the config file would write it (sent sorted by key).
        public var values: [String: String] = [:]

        /// A blank payload.
        public init() {}
        /// `name`'s `values` went on air.
        public init(name: String, values: [String: String]) {
            self.name = name
            self.values = values
        }
    }

    /// `Written(s service, s characteristic, v value, s central)` when a connected central
    /// wrote a characteristic and the value was taken (it fit the declared format): the
    /// value is a number (d), text (s) or bytes (ay) as the format says, and no bytes for a
    /// write-only characteristic, whose values are secrets; no bytes either for a secured
    /// characteristic, but in the copy sent to each subscriber (`Subscribe`); `central` is
    /// its address, empty when BlueZ did not say.
    public struct Written: ControlSignal {
        /// Its member name.
        public static let name = "Written"
        /// Its arguments, in the order it carries them.
        public static let fields: [ControlField<Self>] = [
            .init("service", \.service), .init("characteristic", \.characteristic), .init("value", \.value), .init("central", \.central),
        ]
        /// The service.
        public var service = ""
        /// The characteristic written.
        public var characteristic = ""
        /// The value taken; nil when it is not shown (sent as no bytes).
        public var value: GATTValue? = nil
        /// The central's address; empty when BlueZ did not say.
        public var central = ""
        /// The characteristic written, with its service.
        public var id: GATTCharacteristicID { GATTCharacteristicID(service: service, characteristic: characteristic) }

        /// A blank payload.
        public init() {}
        /// `central` wrote `value` (nil: not shown) to `id`.
        public init(_ id: GATTCharacteristicID, value: GATTValue?, central: String) {
            service = id.service
            characteristic = id.characteristic
            self.value = value
            self.central = central
        }
    }

    /// `Pairing(s event, s central, s detail)`: what happens in a pairing window, sent to
    /// the connection that opened it with `Pair` alone (a directed signal: no other
    /// connection receives it, whatever its match rules). `event` is `opened` and `closed`
    /// (the window; `central` empty), `requested` (a central asks to pair; `detail` is the
    /// 6-digit passkey the central's user types, or empty for just works), `confirm` (does
    /// the central show `detail`? answer with `Confirm`), `paired`, `refused` (`detail`
    /// says why: past its attempts, a bond without a code in a passkey or
    /// numeric-comparison window, not confirmed) and `failed` (no bond within the time: a
    /// wrong code, or the central gave up).
    public struct Pairing: ControlSignal {
        /// Its member name.
        public static let name = "Pairing"
        /// Its arguments, in the order it carries them.
        public static let fields: [ControlField<Self>] = [.init("event", \.event), .init("central", \.central), .init("detail", \.detail)]
        /// What happened: `opened`, `requested`, `confirm`, `paired`, `refused`, `failed`, `closed`.
        public var event = ""
        /// The central's address; empty for the window's own events.
        public var central = ""
        /// A code, or why; empty when there is none.
        public var detail = ""

        /// A blank payload.
        public init() {}
        /// `event` about `central`, with `detail`.
        public init(event: String, central: String, detail: String = "") {
            self.event = event
            self.central = central
            self.detail = detail
        }
    }

    /// `Connected(s central, s adapter)`: a central's link with the adapter came up. Who is
    /// connected is the owner's business: the bus policy lets root, bleadvd's user and group
    /// `bleadvd` alone receive it, `Disconnected`, `LinkChanged` and `Subscription`.
    public struct Connected: ControlSignal {
        /// Its member name.
        public static let name = "Connected"
        /// Its arguments, in the order it carries them.
        public static let fields: [ControlField<Self>] = [.init("central", \.central), .init("adapter", \.adapter)]
        /// The central's address.
        public var central = ""
        /// The adapter (`hci0`).
        public var adapter = ""

        /// A blank payload.
        public init() {}
        /// `central`'s link with `adapter` came up.
        public init(central: String, adapter: String) {
            self.central = central
            self.adapter = adapter
        }
    }

    /// `Disconnected(s central, s adapter, s reason)`: it ended; `reason` says why when
    /// bleadvd ended it (`max_centrals`, idle, `Disconnect`), and is empty otherwise.
    public struct Disconnected: ControlSignal {
        /// Its member name.
        public static let name = "Disconnected"
        /// Its arguments, in the order it carries them.
        public static let fields: [ControlField<Self>] = [.init("central", \.central), .init("adapter", \.adapter), .init("reason", \.reason)]
        /// The central's address.
        public var central = ""
        /// The adapter (`hci0`).
        public var adapter = ""
        /// Why bleadvd ended it; empty when it did not.
        public var reason = ""

        /// A blank payload.
        public init() {}
        /// `central`'s link with `adapter` ended, for `reason`.
        public init(central: String, adapter: String, reason: String) {
            self.central = central
            self.adapter = adapter
            self.reason = reason
        }
    }

    /// `LinkChanged(s central, s adapter, q mtu, as cut)` when what a link carries became
    /// known or changed: its ATT MTU (bluetoothd passes it with the central's reads, writes
    /// and subscriptions), and `cut`, the characteristics (`service.characteristic`) whose
    /// notified value was longer than MTU − 3 bytes, which BlueZ cuts for it.
    public struct LinkChanged: ControlSignal {
        /// Its member name.
        public static let name = "LinkChanged"
        /// Its arguments, in the order it carries them.
        public static let fields: [ControlField<Self>] = [
            .init("central", \.central), .init("adapter", \.adapter), .init("mtu", \.mtu), .init("cut", \.cut),
        ]
        /// The central's address.
        public var central = ""
        /// The adapter (`hci0`).
        public var adapter = ""
        /// The link's ATT MTU.
        public var mtu: UInt16 = 0
        /// The characteristics whose notifications the MTU cuts, sorted.
        public var cut: [String] = []

        /// A blank payload.
        public init() {}
        /// `central`'s link with `adapter` carries `mtu`, and cuts `cut`.
        public init(central: String, adapter: String, mtu: UInt16, cut: [String]) {
            self.central = central
            self.adapter = adapter
            self.mtu = mtu
            self.cut = cut
        }
    }

    /// `Subscription(s service, s characteristic, b subscribed, s central)`: `central` subscribed
    /// to a characteristic's notifications (`true`) or ended its subscription (`false`: it
    /// turned them off or left), where BlueZ gives each central a socket (5.71 and later, a
    /// characteristic that does not indicate). Elsewhere `central` is empty: BlueZ does not say
    /// which central turns them on (`true`, once each), and `false` says none is subscribed any
    /// longer; `Centrals` lists the subscription when only one was connected. A bonded
    /// central's subscription outlasts its link (bluetoothd keeps it).
    public struct Subscription: ControlSignal {
        /// Its member name.
        public static let name = "Subscription"
        /// Its arguments, in the order it carries them.
        public static let fields: [ControlField<Self>] = [
            .init("service", \.service), .init("characteristic", \.characteristic), .init("subscribed", \.subscribed),
            .init("central", \.central),
        ]
        /// The service.
        public var service = ""
        /// The characteristic.
        public var characteristic = ""
        /// Whether a central subscribed (true) or none is subscribed any longer.
        public var subscribed = false
        /// The central, where BlueZ said which; empty otherwise.
        public var central = ""
        /// The characteristic, with its service.
        public var id: GATTCharacteristicID { GATTCharacteristicID(service: service, characteristic: characteristic) }

        /// A blank payload.
        public init() {}
        /// `central` (empty: a central BlueZ did not name) subscribed to `id`, or ended its
        /// subscription (none is subscribed any longer, when unnamed).
        public init(_ id: GATTCharacteristicID, subscribed: Bool, central: String = "") {
            service = id.service
            characteristic = id.characteristic
            self.subscribed = subscribed
            self.central = central
        }
    }
}
