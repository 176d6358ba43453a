public import DBus

/// One advertisement's or GATT service's state as the control API reports it.
public struct AdvertisementState: Hashable, Sendable {
    /// What a name is.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// An `[advertisement.NAME]` table: turned on and off, its values set.
        case advertisement
        /// A `[service.NAME]` table: registered while bleadvd runs (its state is the GATT
        /// application's), its characteristics set.
        case service
    }

    /// Where it is.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// On air.
        case on
        /// Off, as asked.
        case off
        /// A transient failure; the daemon tries again.
        case retrying
        /// Waiting for bluetoothd or an adapter.
        case waiting
        /// Held by bleadvd but off air because a central is connected: the controller took it
        /// off air for the link and refused it beside the link; back when the link ends.
        case paused
        /// Refused for good until it is changed or turned on again.
        case failed
        /// Taking turns with others through fewer slots than advertisements: on air part of
        /// the time (``airShare``); ``id`` is set while its turn lasts.
        case rotating
    }

    /// What it is.
    public var kind: Kind
    /// Whether it should be on air.
    public var desired: Bool
    /// Where it is.
    public var state: State
    /// How long ago the state last changed.
    public var sinceSeconds: Double
    /// BlueZ's identity of the registration (the object path), when on air.
    public var id: String?
    /// The adapter it is registered on (on air) or paused on, by name.
    public var adapter: String?
    /// That adapter's address, where BlueZ said it.
    public var adapterAddress: String?
    /// The last error, when there is one.
    public var error: String?
    /// The last error's code (a `PeripheralError.Code` raw value).
    public var errorCode: String?
    /// When the next attempt is, for `retrying`.
    public var retryInSeconds: Double?
    /// Its values, by config key, as the config file would write them (what `set` changes).
    public var values: [String: String]
    /// The config fields bluetoothd accepted but does not act on (intervals and TX power on
    /// BlueZ before 5.77 without -E).
    public var ignored: [String]
    /// What bleadvd's self-check found on its adapter and could not repair (BlueZ holds more
    /// advertisements there than bleadvd registered), while it is on air.
    public var mismatch: String?
    /// For `rotating`: the fraction of time it is on air (slots over advertisements taking turns).
    public var airShare: Double?

    /// A state.
    public init(
        kind: Kind = .advertisement, desired: Bool, state: State, sinceSeconds: Double, id: String? = nil, error: String? = nil,
        errorCode: String? = nil, retryInSeconds: Double? = nil, values: [String: String] = [:], ignored: [String] = [],
        mismatch: String? = nil
    ) {
        self.kind = kind
        self.desired = desired
        self.state = state
        self.sinceSeconds = sinceSeconds
        self.id = id
        self.error = error
        self.errorCode = errorCode
        self.retryInSeconds = retryInSeconds
        self.values = values
        self.ignored = ignored
        self.mismatch = mismatch
    }

    /// The `a{sv}` the control API sends.
    public var dbusValue: DBusValue {
        var fields: [String: DBusValue] = [
            "kind": .string(kind.rawValue), "desired": .boolean(desired), "state": .string(state.rawValue),
            "since_seconds": .double(sinceSeconds),
        ]
        if let id { fields["id"] = .string(id) }
        if let adapter { fields["adapter"] = .string(adapter) }
        if let adapterAddress { fields["adapter_address"] = .string(adapterAddress) }
        if let error { fields["error"] = .string(error) }
        if let errorCode { fields["error_code"] = .string(errorCode) }
        if let retryInSeconds { fields["retry_in_seconds"] = .double(retryInSeconds) }
        if !ignored.isEmpty { fields["ignored"] = .array(.string, ignored.map(DBusValue.string)) }
        if let mismatch { fields["mismatch"] = .string(mismatch) }
        if let airShare { fields["air_share"] = .double(airShare) }
        fields["values"] = .dictionary(
            key: .string, value: .string, values.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .string($0.value)) })
        return .variantDictionary(fields)
    }

    /// Reads the `a{sv}` of one name; nil when required fields are missing or mistyped. One
    /// without `kind` (from a bleadvd before it was sent) is an advertisement.
    public init?(_ value: DBusValue) {
        guard let fields = value.variantDictionary, let desired = fields["desired"]?.boolean,
              let state = fields["state"]?.string.flatMap(State.init), let since = fields["since_seconds"]?.double,
              let kind = fields["kind"].map({ $0.string.flatMap(Kind.init) }) ?? .advertisement
        else { return nil }
        self.init(
            kind: kind, desired: desired, state: state, sinceSeconds: since, id: fields["id"]?.string,
            error: fields["error"]?.string, errorCode: fields["error_code"]?.string,
            retryInSeconds: fields["retry_in_seconds"]?.double,
            values: (fields["values"]?.dictionaryEntries ?? []).reduce(into: [:]) { result, entry in
                if let key = entry.key.string, let value = entry.value.string { result[key] = value }
            },
            ignored: fields["ignored"]?.stringArray ?? [], mismatch: fields["mismatch"]?.string)
        adapter = fields["adapter"]?.string
        adapterAddress = fields["adapter_address"]?.string
        airShare = fields["air_share"]?.double
    }
}
