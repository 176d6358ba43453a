@testable import AdvertiserDaemon
import AdvertiserConfig
import BluetoothModule
import Events
import Logging
import PeripheralMocks
import Synchronization
import TestSupport
import Testing

/// The rotation component on the manual clock, with a port that records what it holds and
/// answers a count of slots.
@Suite("The rotation component", .timeLimit(.minutes(1)))
struct RotationComponentTests {
    final class Port: SlotKeeping {
        let count = Mutex(AdapterSlots(adapter: "hci0", free: 5, active: 0, ours: 0))
        let holds = Mutex<[Set<String>]>([])
        let reads = Mutex(0)
        func demands() async -> any AsyncSequence<[String: SlotDemand], Never> & Sendable { AsyncStream { _ in } }
        func hold(_ names: Set<String>) async { holds.withLock { $0.append(names) } }
        func slots() async -> AdapterSlots? {
            reads.withLock { $0 += 1 }
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

        init(count: Int, slots: String = "") throws {
            loop = try EventLoop.onNewThread(name: "rotation-test")
            var text = slots.isEmpty ? "" : "[slots]\n\(slots)\n"
            for index in 1...count { text += "[advertisement.ad\(index)]\ntype = \"broadcast\"\nmanufacturer_data = { \"0xFFFF\" = \"0\(index)\" }\n" }
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
}
