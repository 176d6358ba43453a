/// Which advertisements are on air in one turn when they outnumber the slots: a pure function of
/// the advertisements wanted, their priorities, the slots and the turn's number.
///
/// Priorities are served highest first. A priority whose advertisements all fit in the slots
/// left stays on air; the first that does not takes turns through the slots left, fairly (in
/// name order, the window of on-air names moving one name a turn, so that each turn takes one
/// advertisement off air and puts one on); those below it wait. A higher priority is never taken
/// off air for a lower one.
struct RotationPlan: Hashable, Sendable {
    /// On air this turn.
    var onAir: Set<String>
    /// The share of air time of each advertisement that takes turns (between 0 and 1), and of
    /// each that waits (0); one always on air is not listed.
    var shares: [String: Share]

    /// One advertisement's part in the rotation.
    struct Share: Hashable, Sendable {
        /// Slots its priority's turns go through.
        var slots: Int
        /// Advertisements taking turns through them.
        var among: Int

        /// The fraction of time it is on air.
        var fraction: Double { among == 0 ? 0 : Double(slots) / Double(among) }
    }

    /// Whether anything takes turns (rather than only waits).
    var rotates: Bool { shares.values.contains { $0.slots > 0 } }

    /// The plan for turn `turn` of `priorities` (name to priority) through `slots` slots.
    init(priorities: [String: Int], slots: Int, turn: Int) {
        onAir = []
        shares = [:]
        guard priorities.count > slots else {
            onAir = Set(priorities.keys)
            return
        }
        var left = max(0, slots)
        let levels = Dictionary(grouping: priorities.keys, by: { priorities[$0]! })
        for level in levels.keys.sorted(by: >) {
            let names = levels[level]!.sorted()
            if names.count <= left {
                onAir.formUnion(names)
                left -= names.count
                continue
            }
            let start = left == 0 ? 0 : turn % names.count
            for offset in 0..<left { onAir.insert(names[(start + offset) % names.count]) }
            for name in names { shares[name] = Share(slots: left, among: names.count) }
            left = 0
        }
    }
}
