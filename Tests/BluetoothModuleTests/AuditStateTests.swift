@testable import BluetoothModule
import PeripheralMocks
import Testing

/// What follows each audit, as a value: another audit after a repair, until the same
/// difference has come back after `limit` repairs in a row; each adapter's finding reported once
/// when it appears or changes, and once when it goes.
@Suite("The audit's state")
struct AuditStateTests {
    typealias State = AuditState<ManualClock.Instant>
    static let other = "BlueZ holds 3 advertisement(s) on hci0, bleadvd 2"

    @Test("an audit that repaired asks for another, until limit audits in a row repaired; then none until something changes")
    func repairsInARowStopAtTheLimit() {
        var state = State()

        let answers = (1...4).map { _ in state.repaired(limit: 3) }

        #expect(answers == [true, true, false, true])
    }

    @Test("an audit that repaired nothing starts the count of repairs in a row again")
    func anAuditWithoutRepairResetsTheCount() {
        var state = State()
        _ = state.repaired(limit: 3)
        _ = state.repaired(limit: 3)

        _ = state.settled([:])
        let afterReset = (state.repairsInARow, state.repaired(limit: 3))

        #expect(afterReset.0 == 0)
        #expect(afterReset.1)
    }

    @Test("a finding is reported when it appears, not again while it stays, and its adapter agrees again when it goes")
    func findingsReportedOnceEachWay() {
        var state = State()

        let appeared = state.settled(["hci0": Self.other])
        let stayed = state.settled(["hci0": Self.other])
        let went = state.settled([:])

        #expect(appeared.new.map(\.adapter) == ["hci0"] && appeared.gone.isEmpty)
        #expect(stayed.new.isEmpty && stayed.gone.isEmpty)
        #expect(went.new.isEmpty && went.gone == ["hci0"])
        #expect(state.found.isEmpty)
    }

    @Test("a finding whose text changed is reported again, and findings come sorted by adapter")
    func changedFindingReportedAgain() {
        var state = State()
        _ = state.settled(["hci1": "one", "hci0": Self.other])

        let changed = state.settled(["hci1": "two", "hci0": Self.other, "hci2": "three"])

        #expect(changed.new.map(\.adapter) == ["hci1", "hci2"])
        #expect(state.found == ["hci0": Self.other, "hci1": "two", "hci2": "three"])
    }
}
