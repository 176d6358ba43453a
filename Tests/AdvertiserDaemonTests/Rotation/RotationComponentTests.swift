@testable import AdvertiserDaemon
import AdvertiserConfig
import BluetoothModule
import Events
import Logging
import Peripheral
import PeripheralMocks
import Synchronization
import TestSupport
import Testing

/// The rotation component on the manual clock, with a port that records what it holds and
/// answers a count of slots.
@Suite("The rotation component", .timeLimit(.minutes(3)))
struct RotationComponentTests {
    final class Port: SlotKeeping {
        let count = Mutex(AdapterSlots(adapter: "hci0", free: 5, active: 0, ours: 0))
        let holds = Mutex<[Set<String>]>([])
        let reads = Mutex(0)
        /// While false, a count of the slots waits (BlueZ slow to answer).
        let answering = Mutex(true)
        func demands() async -> any AsyncSequence<[String: SlotDemand], Never> & Sendable { AsyncStream { _ in } }
        func hold(_ names: Set<String>) async { holds.withLock { $0.append(names) } }
        func slots() async -> AdapterSlots? {
            reads.withLock { $0 += 1 }
            while !answering.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(1)) }
            return count.withLock { $0 }
        }
        var lastHold: Set<String>? { holds.withLock { $0.last } }
        var holdCount: Int { holds.withLock { $0.count } }
    }

    struct Harness {
        let clock = ManualClock()
        let port = Port()
        let loop: EventLoop
        let rotation: Rotation<ManualClock>

        /// `count` advertisements ad1, ad2...; the first `favoured` of priority 10, the rest 0.
        init(count: Int, favoured: Int = 0, slots: String = "") throws {
            loop = try EventLoop.onNewThread(name: "rotation-test")
            var text = slots.isEmpty ? "" : "[slots]\n\(slots)\n"
            for index in 1...count {
                text += "[advertisement.ad\(index)]\ntype = \"broadcast\"\nmanufacturer_data = { \"0xFFFF\" = \"0\(index)\" }\n"
                if index <= favoured { text += "priority = 10\n" }
            }
            let config = try ConfigParser.parse(text, file: "test.toml")
            rotation = Rotation(config: config, port: port, clock: clock, logger: Logger(label: "test"), executor: loop)
        }

        /// Every advertisement wants to be on air; `crowded` are refused for want of a slot.
        func want(_ names: [String], crowded: Set<String> = []) async {
            await rotation.consider(Dictionary(uniqueKeysWithValues: names.map { ($0, SlotDemand(wanted: true, crowded: crowded.contains($0))) }))
        }
    }

    static let eight = (1...8).map { "ad\($0)" }

    @Test("advertisements that fit, with nothing reserved, cost no read of the slots, no hold and no timer")
    func fitting() async throws {
        let h = try Harness(count: 3)

        await h.want(["ad1", "ad2", "ad3"])
        await h.want(["ad1", "ad2"])

        #expect(h.port.reads.withLock { $0 } == 0)
        #expect(h.port.lastHold == nil)
        #expect(h.clock.deadlines.isEmpty)
    }

    @Test("one refused for want of a slot makes the rotation count the slots; when all fit after all, nothing is held")
    func crowdedButFitting() async throws {
        let h = try Harness(count: 3)

        await h.want(["ad1", "ad2", "ad3"], crowded: ["ad3"])

        #expect(h.port.reads.withLock { $0 } == 1)
        #expect(h.port.lastHold == [])
        #expect(await h.rotation.shares().isEmpty)
    }

    @Test("eight for five slots: three held back, and a turn every rotate_seconds moves one out and the next in")
    func turns() async throws {
        let h = try Harness(count: 8, slots: "rotate_seconds = 4")
        await h.want(Self.eight, crowded: ["ad6", "ad7", "ad8"])
        let first = try #require(h.port.lastHold)

        await h.clock.waitForSleepers(1)
        h.clock.advance(by: .seconds(4))
        try await eventually("the second turn") { h.port.holdCount == 2 }
        let second = try #require(h.port.lastHold)

        #expect(first == ["ad6", "ad7", "ad8"])
        #expect(first.subtracting(second).count == 1 && second.subtracting(first).count == 1)
        #expect(await h.rotation.shares()["ad1"] == RotationPlan.Share(slots: 5, among: 8))
    }

    @Test("reserve_slots leaves slots to other programs: eight for the five less one")
    func reserve() async throws {
        let h = try Harness(count: 8, slots: "reserve_slots = 1")

        await h.want(Self.eight)

        #expect(h.port.lastHold?.count == 4)
        #expect(await h.rotation.shares()["ad8"] == RotationPlan.Share(slots: 4, among: 8))
    }

    @Test("when they fit again, nothing is held and the timer stops")
    func rotationEnds() async throws {
        let h = try Harness(count: 8)
        await h.want(Self.eight, crowded: ["ad8"])
        await h.clock.waitForSleepers(1)

        await h.want(Array(Self.eight.prefix(5)))

        #expect(h.port.lastHold == [])
        #expect(await h.rotation.shares().isEmpty)
        #expect(h.clock.deadlines.isEmpty)
    }

    @Test("while sharing, demands that change nothing the rotation needs read no slots")
    func unchangedDemandsReadNothing() async throws {
        let h = try Harness(count: 8)
        await h.want(Self.eight, crowded: ["ad8"])
        let reads = h.port.reads.withLock { $0 }

        await h.want(Self.eight)

        #expect(h.port.reads.withLock { $0 } == reads)
    }

    // The soak's stall (make soak-faults SEED=80 STEPS=9): the controller reported one set, the
    // favoured advertisement took it and the others waited with nothing to take turns; when
    // bluetoothd came back with 240 slots nothing counted them again, and the four waited for good.

    @Test("advertisements waiting below a favoured one are counted again each turn: when the slots grow, they go on air")
    func waitingRecounted() async throws {
        let h = try Harness(count: 3, favoured: 1, slots: "rotate_seconds = 4")
        h.port.count.withLock { $0 = AdapterSlots(adapter: "hci0", free: 1, active: 0, ours: 0) }
        await h.want(["ad1", "ad2", "ad3"], crowded: ["ad2", "ad3"])
        #expect(h.port.lastHold == ["ad2", "ad3"])
        h.port.count.withLock { $0 = AdapterSlots(adapter: "hci0", free: 239, active: 1, ours: 1) }

        try await eventually("a timer while advertisements wait for a slot") { !h.clock.deadlines.isEmpty }
        h.clock.advance(by: .seconds(4))

        try await eventually("the waiting released") { h.port.lastHold == [] }
    }

    @Test("an adapter powered on or added makes the rotation count the slots again at once")
    func adapterBackRecounted() async throws {
        let h = try Harness(count: 3, favoured: 1)
        h.port.count.withLock { $0 = AdapterSlots(adapter: "hci0", free: 1, active: 0, ours: 0) }
        await h.want(["ad1", "ad2", "ad3"], crowded: ["ad2", "ad3"])
        h.port.count.withLock { $0 = AdapterSlots(adapter: "hci0", free: 239, active: 1, ours: 1) }

        guard case .inTurn(let input) = h.rotation.delivery(of: .adapterPowered("hci0", true)) else {
            Issue.record("the rotation does not take an adapter powered on")
            return
        }
        await h.rotation.take(input)

        #expect(h.port.lastHold == [])
        #expect(await h.rotation.shares().isEmpty)
    }

    @Test("fifty adapters powered on while the slots are being counted cost one count more, not fifty")
    func adapterBurstMerged() async throws {
        let h = try Harness(count: 3, favoured: 1)
        h.port.count.withLock { $0 = AdapterSlots(adapter: "hci0", free: 1, active: 0, ours: 0) }
        await h.want(["ad1", "ad2", "ad3"], crowded: ["ad2", "ad3"])
        let before = h.port.reads.withLock { $0 }
        h.port.answering.withLock { $0 = false }

        await withDiscardingTaskGroup { group in
            var router = Router()
            router.add(h.rotation, in: &group, logger: Logger(label: "test"))
            for _ in 0..<50 { await router.route(.adapterPowered("hci0", true)) }
            h.port.answering.withLock { $0 = true }
            router.finish()
            try? await eventually("the slots counted again") { h.port.reads.withLock { $0 } > before }
            try? await Task.sleep(for: .milliseconds(200))  // what else was queued, taken
            group.cancelAll()  // the rotation's run(), on the port's endless demands
        }

        #expect(h.port.reads.withLock { $0 } - before <= 2)
    }

    @Test("with everything fitting, an adapter powered on reads no slots")
    func adapterBackWhileFittingReadsNothing() async throws {
        let h = try Harness(count: 3)
        await h.want(["ad1", "ad2", "ad3"])

        if case .inTurn(let input) = h.rotation.delivery(of: .adapterAdded("hci0")) { await h.rotation.take(input) }

        #expect(h.port.reads.withLock { $0 } == 0)
    }
}
