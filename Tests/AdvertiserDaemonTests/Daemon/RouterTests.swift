@testable import AdvertiserDaemon
import Peripheral
import TestSupport
import Testing

/// How BlueZ's events reach the daemon's components: each takes what it declares, at once or
/// through a queue of its own, in the order of the list (`Router`).
@Suite("The router hands BlueZ's events to the components")
struct RouterTests {
    /// A component that records what it takes, takes what `takes` says, and, while `held`,
    /// waits before taking anything.
    actor Recording: DaemonComponent {
        let name: String
        let takes: @Sendable (PeripheralEvent) -> Delivery<String>
        let limit: Int?
        var taken: [String] = []
        var held = false
        var waiting: [CheckedContinuation<Void, Never>] = []

        init(_ name: String, limit: Int? = nil, takes: @escaping @Sendable (PeripheralEvent) -> Delivery<String>) {
            self.name = name
            self.limit = limit
            self.takes = takes
        }

        nonisolated func delivery(of event: PeripheralEvent) -> Delivery<String> { takes(event) }
        nonisolated var backlog: Int? { limit }
        nonisolated func dropped(_ input: String) -> String { "\(name) dropped \(input)" }

        func take(_ input: String) async {
            if held { await withCheckedContinuation { waiting.append($0) } }
            taken.append(input)
        }

        func hold() { held = true }
        func release() {
            held = false
            for waiter in waiting { waiter.resume() }
            waiting = []
        }
    }

    static let bond = PeripheralEvent.paired(central: "AA:BB:CC:DD:EE:01", adapter: "hci0")
    static let link = PeripheralEvent.connected(central: "AA:BB:CC:DD:EE:01", adapter: "hci0")

    /// Routes `events` through `components` (added in order) and returns once routed.
    static func route(_ events: [PeripheralEvent], through components: [Recording], logs: LogLines = LogLines()) async {
        await withDiscardingTaskGroup { group in
            var router = Router()
            for component in components { router.add(component, in: &group, logger: logs.logger()) }
            for event in events { await router.route(event) }
            router.finish()
        }
    }

    @Test("an event one component takes alone never reaches the components after it")
    func takenAloneStops() async throws {
        let first = Recording("first") { _ in .inTurnAlone("bond") }
        let second = Recording("second") { _ in .now("bond") }

        await Self.route([Self.bond], through: [first, second])

        #expect(await first.taken == ["bond"])
        #expect(await second.taken == [])
    }

    @Test("an event one component takes in turn reaches the components after it too")
    func takenInTurnGoesOn() async throws {
        let first = Recording("first") { _ in .inTurn("bond") }
        let second = Recording("second") { _ in .now("bond") }

        await Self.route([Self.bond], through: [first, second])

        #expect(await first.taken == ["bond"])
        #expect(await second.taken == ["bond"])
    }

    @Test("a component busy with its queue holds up no other component's events")
    func busyComponentHoldsUpNoOther() async throws {
        let slow = Recording("slow") { _ in .inTurn("event") }
        let fast = Recording("fast") { event in event == Self.link ? .now("link") : .pass }
        await slow.hold()

        let routing = Task { await Self.route([Self.bond, Self.link], through: [slow, fast]) }

        try await eventually("the fast component takes the link") { await fast.taken == ["link"] }
        #expect(await slow.taken == [])
        await slow.release()
        await routing.value
        #expect(await slow.taken == ["event", "event"])
    }

    @Test("inputs beyond a component's backlog are dropped, and the journal says so once a streak")
    func backlogDropsAndSaysSoOnce() async throws {
        let logs = LogLines()
        let bounded = Recording("bounded", limit: 2) { _ in .inTurn("bond") }
        await bounded.hold()

        await withDiscardingTaskGroup { group in
            var router = Router()
            router.add(bounded, in: &group, logger: logs.logger())
            await router.route(Self.bond)
            try? await eventually("the first is being taken") { await bounded.waiting.count == 1 }
            for _ in 1..<10 { await router.route(Self.bond) }
            await bounded.release()
            router.finish()
        }

        #expect(logs.all == ["warning: bounded dropped bond"])
        #expect(await bounded.taken.count == 3)
    }
}
