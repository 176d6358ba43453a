@testable import AdvertiserDaemon
import Peripheral
import PeripheralMocks
import Testing

/// Improv's frames per central as a value, on a manual clock's instants.
@Suite("Improv's frames, each central's apart")
struct ImprovFramesTests {
    let start = ManualClock().now
    static let scan: [UInt8] = [0x04, 0x00, 0x04]

    @Test("one central's partial frame does not touch another's whole frame")
    func partialDoesNotDelayOthers() {
        var frames = ImprovFrames<ManualClock.Instant>()
        _ = frames.add([0x01, 0xFF], from: "66:66:66:66:66:66", at: start)

        let other = frames.add(Self.scan, from: "AA:BB:CC:DD:EE:FF", at: start)

        #expect(other.piece == .frame(Self.scan))
        #expect(frames.partial.keys.sorted() == ["66:66:66:66:66:66"])
    }

    @Test("a partial frame is dropped 5 s after its last part, not at 4.9 s")
    func expiresAfterItsLastPart() {
        var frames = ImprovFrames<ManualClock.Instant>()
        _ = frames.add([0x01], from: "AA:BB:CC:DD:EE:FF", at: start)
        _ = frames.add([0x20], from: "AA:BB:CC:DD:EE:FF", at: start.advanced(by: .seconds(2)))

        let early = frames.expire(at: start.advanced(by: .milliseconds(6_900)))
        let late = frames.expire(at: start.advanced(by: .seconds(7)))

        #expect(early.isEmpty)
        #expect(late.map(\.central) == ["AA:BB:CC:DD:EE:FF"])
        #expect(late.map(\.bytes) == [2])
        #expect(frames.nextDue == nil)
    }

    @Test("a disconnect drops the central's partial frame and says how many bytes it had")
    func dropOnDisconnect() {
        var frames = ImprovFrames<ManualClock.Instant>()
        _ = frames.add([0x01, 0x10, 0x04], from: "AA:BB:CC:DD:EE:FF", at: start)

        let dropped = frames.drop("AA:BB:CC:DD:EE:FF")
        let again = frames.drop("AA:BB:CC:DD:EE:FF")

        #expect(dropped == 3)
        #expect(again == nil)
        #expect(frames.partial.isEmpty)
    }

    @Test("a fifth central with a partial frame drops the oldest one's, not the newcomer's")
    func boundedCentrals() {
        var frames = ImprovFrames<ManualClock.Instant>()
        for index in 1...4 {
            _ = frames.add([0x01, 0xFF], from: "0\(index):00:00:00:00:00", at: start.advanced(by: .seconds(index)))
        }

        let fifth = frames.add([0x01, 0xFF], from: "05:00:00:00:00:00", at: start.advanced(by: .seconds(5)))

        #expect(fifth.evicted == "01:00:00:00:00:00")
        #expect(frames.partial.keys.sorted() == ["02:00:00:00:00:00", "03:00:00:00:00:00", "04:00:00:00:00:00", "05:00:00:00:00:00"])
    }
}
