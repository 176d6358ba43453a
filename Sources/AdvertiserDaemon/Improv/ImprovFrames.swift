import Peripheral

/// Improv's command frames as centrals write them, as a value apart from its effects: each
/// central's partial frame apart from every other's, so that one central's half-written frame
/// (`01 FF` and gone) never delays another's; a partial frame is dropped, its bytes zeroed,
/// when its central disconnects or ``partLimit`` after its last part; at most
/// ``centralLimit`` centrals have one at a time (one more drops the oldest).
struct ImprovFrames<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    /// How long a partial frame waits for its next part.
    static var partLimit: Duration { .seconds(5) }
    /// How many centrals may have a partial frame at once.
    static var centralLimit: Int { 4 }

    /// A central's frame under way, and when its last part came.
    struct Partial: Sendable {
        var assembler = Improv.Assembler()
        var since: Instant
    }

    /// The frames under way, by central.
    private(set) var partial: [String: Partial] = [:]

    /// Adds the bytes `central` wrote at `now`: a whole frame (or an overrun) once it is
    /// complete, else `incomplete` and kept. Returns with it the central whose partial frame
    /// was dropped to make room, if one was.
    mutating func add(_ bytes: [UInt8], from central: String, at now: Instant) -> (piece: Improv.Assembler.Piece, evicted: String?) {
        var entry = partial.removeValue(forKey: central) ?? Partial(since: now)
        let piece = entry.assembler.add(bytes)
        guard case .incomplete = piece else { return (piece, nil) }
        var evicted: String?
        if partial.count >= Self.centralLimit, let oldest = partial.min(by: { $0.value.since < $1.value.since })?.key {
            _ = drop(oldest)
            evicted = oldest
        }
        entry.since = now
        partial[central] = entry
        return (piece, evicted)
    }

    /// Drops `central`'s partial frame, zeroed; returns how many bytes it had (nil: none).
    mutating func drop(_ central: String) -> Int? {
        guard var entry = partial.removeValue(forKey: central) else { return nil }
        let count = entry.assembler.pending.count
        entry.assembler.reset()
        return count
    }

    /// Drops every partial frame whose next part did not come within ``partLimit`` of `now`:
    /// their centrals, in address order, with how many bytes each had.
    mutating func expire(at now: Instant) -> [(central: String, bytes: Int)] {
        let late = partial.filter { $0.value.since.advanced(by: Self.partLimit) <= now }.keys.sorted()
        return late.compactMap { central in drop(central).map { (central, $0) } }
    }

    /// When the next partial frame is due to be dropped.
    var nextDue: Instant? {
        partial.values.map { $0.since.advanced(by: Self.partLimit) }.min()
    }
}
