/// The `[slots]` table: how bleadvd shares the adapter's advertising slots when its
/// advertisements outnumber them, and how many it leaves to other programs.
public struct SlotsConfig: Hashable, Sendable {
    /// How long each turn of a rotation lasts (`rotate_seconds`): each turn takes one
    /// advertisement off air and puts the next on.
    public var rotateEvery: Duration
    /// Slots left free for other programs (`reserve_slots`): bluetoothctl, the Matter SDK.
    public var reserve: Int

    /// What `rotate_seconds` and `reserve_slots` may be.
    static let rotateRange = 2...3600
    static let reserveRange = 0...16

    /// Turns of 10 s, nothing reserved.
    public init(rotateEvery: Duration = .seconds(10), reserve: Int = 0) {
        self.rotateEvery = rotateEvery
        self.reserve = reserve
    }
}

extension Reader {
    /// The `[slots]` table.
    func slots(_ fields: [String: TOMLNode]) throws(ConfigError) -> SlotsConfig {
        let path = ["slots"]
        try checkKeys(fields, allowed: ["rotate_seconds", "reserve_slots"], at: path)
        var slots = SlotsConfig()
        if let node = fields["rotate_seconds"] { slots.rotateEvery = .seconds(try number(node, path + ["rotate_seconds"], SlotsConfig.rotateRange)) }
        if let node = fields["reserve_slots"] { slots.reserve = try number(node, path + ["reserve_slots"], SlotsConfig.reserveRange) }
        return slots
    }
}
