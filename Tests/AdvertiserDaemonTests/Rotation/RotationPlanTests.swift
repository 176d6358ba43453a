@testable import AdvertiserDaemon
import BluetoothModule
import Testing

@Suite("Turns through fewer slots than advertisements")
struct RotationPlanTests {
    static let eight = Dictionary(uniqueKeysWithValues: (1...8).map { ("ad\($0)", 0) })

    @Test("advertisements that fit are all on air, and nothing takes turns")
    func everythingFits() {
        let plan = RotationPlan(priorities: ["a": 0, "b": 5], slots: 2, turn: 7)

        #expect(plan.onAir == ["a", "b"])
        #expect(plan.shares.isEmpty)
        #expect(!plan.rotates)
    }

    @Test("eight of one priority through five slots: five on air each turn, each on air five turns of eight")
    func fairWithinAPriority() {
        let plans = (0..<8).map { RotationPlan(priorities: Self.eight, slots: 5, turn: $0) }

        #expect(plans.allSatisfy { $0.onAir.count == 5 })
        for name in Self.eight.keys {
            #expect(plans.filter { $0.onAir.contains(name) }.count == 5, "\(name)")
        }
        #expect(plans[0].shares["ad1"] == RotationPlan.Share(slots: 5, among: 8))
    }

    @Test("each turn takes one advertisement off air and puts one on: one unregister and one register")
    func oneChangeATurn() {
        for turn in 0..<16 {
            let now = RotationPlan(priorities: Self.eight, slots: 5, turn: turn).onAir
            let next = RotationPlan(priorities: Self.eight, slots: 5, turn: turn + 1).onAir

            #expect(now.subtracting(next).count == 1 && next.subtracting(now).count == 1, "turn \(turn)")
        }
    }

    @Test("a higher priority stays on air every turn; the lower ones take turns through the slots left")
    func higherPriorityStays() {
        var priorities = Self.eight
        priorities["beacon"] = 10

        let plans = (0..<8).map { RotationPlan(priorities: priorities, slots: 5, turn: $0) }

        #expect(plans.allSatisfy { $0.onAir.contains("beacon") && $0.onAir.count == 5 })
        #expect(plans[0].shares["beacon"] == nil)
        #expect(plans[0].shares["ad1"] == RotationPlan.Share(slots: 4, among: 8))
    }

    @Test("a priority below the one taking turns waits: never on air, a share of nothing")
    func lowerPriorityWaits() {
        var priorities = Self.eight
        priorities["spare"] = -1

        let plans = (0..<9).map { RotationPlan(priorities: priorities, slots: 5, turn: $0) }

        #expect(plans.allSatisfy { !$0.onAir.contains("spare") })
        #expect(plans[0].shares["spare"] == RotationPlan.Share(slots: 0, among: 1))
        #expect(plans[0].shares["spare"]?.fraction == 0)
    }

    @Test("with no slot, everything waits and nothing takes turns")
    func noSlot() {
        let plan = RotationPlan(priorities: ["a": 0, "b": 0], slots: 0, turn: 3)

        #expect(plan.onAir.isEmpty)
        #expect(!plan.rotates)
    }

    @Test("the slots usable leave the reserve to other programs, or what they hold when they hold more",
          arguments: [(3, 2, 2, 0, 5), (3, 2, 2, 1, 4), (0, 5, 3, 1, 3), (0, 5, 3, 0, 3), (4, 1, 0, 2, 3)])
    func usableSlots(free: Int, active: Int, ours: Int, reserve: Int, usable: Int) {
        let slots = AdapterSlots(adapter: "hci0", free: free, active: active, ours: ours)

        #expect(slots.usable(reserving: reserve) == usable)
    }
}

extension RotationPlanTests {
    static let sevenForFour = RotationPlan(priorities: Dictionary(uniqueKeysWithValues: (1...7).map { ("ad\($0)", 0) }).merging(["beacon": 10]) { $1 }, slots: 5, turn: 0)

    @Test("with extended advertising a turn lasts rotate_seconds")
    func turnOnExtendedAdapter() {
        let slots = AdapterSlots(adapter: "hci0", free: 0, active: 5, ours: 5, shownInTurn: false)

        #expect(Rotation<ContinuousClock>.turnLength(.seconds(2), plan: Self.sevenForFour, slots: slots) == .seconds(2))
    }

    @Test("without it, a turn lasts long enough that each advertisement stays through the kernel's round: 4 windows of 3 s for 5 shown 2 s each")
    func turnOnLegacyAdapter() {
        let slots = AdapterSlots(adapter: "hci0", free: 0, active: 5, ours: 5, shownInTurn: true)

        #expect(Rotation<ContinuousClock>.turnLength(.seconds(2), plan: Self.sevenForFour, slots: slots) == .seconds(3))
        #expect(Rotation<ContinuousClock>.turnLength(.seconds(10), plan: Self.sevenForFour, slots: slots) == .seconds(10))
    }

    @Test("one slot taking turns on such an adapter: each must stay the kernel's whole round, 12 s for 5")
    func turnThroughOneSlot() {
        let plan = RotationPlan(priorities: ["a": 10, "b": 10, "c": 10, "d": 10, "e": 0, "f": 0], slots: 5, turn: 0)
        let slots = AdapterSlots(adapter: "hci0", free: 0, active: 5, ours: 5, shownInTurn: true)

        #expect(Rotation<ContinuousClock>.turnLength(.seconds(2), plan: plan, slots: slots) == .seconds(12))
    }
}
