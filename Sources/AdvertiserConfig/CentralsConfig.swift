/// The `[centrals]` table: how many centrals may hold a link with the adapter at once, and how
/// long one may hold it doing nothing.
public struct CentralsConfig: Hashable, Sendable {
    /// The most centrals connected to an adapter at once (`max_centrals`); one beyond is
    /// disconnected at once. Nil: as many as the controller takes.
    public var maximum: Int?
    /// How long a central may hold a link without reading, writing or subscribing
    /// (`idle_disconnect_seconds`) before it is disconnected; nil: for ever.
    public var idleDisconnect: Duration?

    /// What `max_centrals` and `idle_disconnect_seconds` may be.
    static let maximumRange = 1...32
    static let idleRange = 5...86_400

    /// No limit.
    public init(maximum: Int? = nil, idleDisconnect: Duration? = nil) {
        self.maximum = maximum
        self.idleDisconnect = idleDisconnect
    }
}

extension Reader {
    /// The `[centrals]` table.
    func centrals(_ fields: [String: TOMLNode]) throws(ConfigError) -> CentralsConfig {
        let path = ["centrals"]
        try checkKeys(fields, allowed: ["max_centrals", "idle_disconnect_seconds"], at: path)
        var centrals = CentralsConfig()
        if let node = fields["max_centrals"] { centrals.maximum = try number(node, path + ["max_centrals"], CentralsConfig.maximumRange) }
        if let node = fields["idle_disconnect_seconds"] {
            centrals.idleDisconnect = .seconds(try number(node, path + ["idle_disconnect_seconds"], CentralsConfig.idleRange))
        }
        return centrals
    }
}
