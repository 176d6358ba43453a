/// The audit's state, as a value: when the next audit is due, how many audits in a row repaired
/// something, and what the last one found and could not repair. The module runs the audits; this
/// decides what follows each, so that a difference that comes back after every repair is
/// reported, not fought, and each adapter's finding is logged once when it appears and once when
/// it goes.
struct AuditState<Instant: InstantProtocol>: Sendable {
    /// When the next audit is due, if one is.
    var due: Instant?
    /// How many audits in a row repaired something.
    private(set) var repairsInARow = 0
    /// What the last audit found and could not repair, by adapter.
    private(set) var found: [String: String] = [:]

    /// An audit repaired something: whether another is to count again once the repairs settle.
    /// After `limit` audits in a row that repaired, none is: the count starts again at the
    /// next change.
    mutating func repaired(limit: Int) -> Bool {
        repairsInARow += 1
        if repairsInARow < limit { return true }
        repairsInARow = 0
        return false
    }

    /// An audit ended with what it could not explain, by adapter: returns the findings that are
    /// new or changed since the last audit (to report), and the adapters whose finding went
    /// (which agree again), each sorted by adapter.
    mutating func settled(_ unexplained: [String: String]) -> (new: [(adapter: String, text: String)], gone: [String]) {
        repairsInARow = 0
        let new = unexplained.sorted { $0.key < $1.key }.filter { found[$0.key] != $0.value }.map { (adapter: $0.key, text: $0.value) }
        let gone = found.keys.sorted().filter { unexplained[$0] == nil }
        found = unexplained
        return (new, gone)
    }
}
