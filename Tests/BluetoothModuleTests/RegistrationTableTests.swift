@testable import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// What the module keeps registered and where each is, as a value: the phases a registration
/// moves through, what a failure leads to, what a run of bluetoothd takes with it, and what is
/// due. No manager, no clock: instants are given.
@Suite("The registration table")
struct RegistrationTableTests {
    typealias Table = RegistrationTable<ManualClock.Instant>
    static let start = ManualClock.Instant(offset: .zero)
    static let old = StackGeneration(1, name: ":1.1")
    static let new = StackGeneration(2, name: ":1.2")

    /// A table holding `names` as advertisements, each wanted on and in `phase`.
    static func table(_ names: [String], _ phase: Table.Phase = .waiting) -> Table {
        var table = Table()
        for name in names {
            table[.advertisement(name)] = Table.Registration(
                subject: .advertisement(Advertisement(kind: .broadcast, localName: name)), status: Table.Status(desired: true, phase: phase, since: start))
        }
        return table
    }

    static func backoff(_ failures: Int) -> Duration { .seconds(failures) }

    @Test("a transient failure retries after the backoff of the failures in a row, counting them")
    func transientFailureRetries() {
        var table = Self.table(["heart"])
        let error = PeripheralError(.timeout, "no answer")

        let first = table.fail(.advertisement("heart"), error, notNow: false, at: Self.start, backoff: Self.backoff)
        let second = table.fail(.advertisement("heart"), error, notNow: false, at: Self.start, backoff: Self.backoff)

        #expect(first == .retrying(at: Self.start.advanced(by: .seconds(1)), delay: .seconds(1)))
        #expect(second == .retrying(at: Self.start.advanced(by: .seconds(2)), delay: .seconds(2)))
        #expect(table[.advertisement("heart")]?.status.phase == .retrying(at: Self.start.advanced(by: .seconds(2)), failures: 2))
        #expect(table[.advertisement("heart")]?.status.lastError == error)
    }

    @Test("no adapter or no BlueZ waits for an event and says the adapter in use is gone; a refusal of the stack view waits without that")
    func waitingFailures() {
        var table = Self.table(["a", "b"])

        let gone = table.fail(.advertisement("a"), PeripheralError(.noAdapter, "no adapter"), notNow: false, at: Self.start, backoff: Self.backoff)
        let notNow = table.fail(.advertisement("b"), PeripheralError(.timeout, "settling"), notNow: true, at: Self.start, backoff: Self.backoff)

        #expect(gone == .waiting(adapterGone: true))
        #expect(notNow == .waiting(adapterGone: false))
        #expect(table.due == [.advertisement("a"), .advertisement("b")])
    }

    @Test("a permanent failure fails for good: it is not due again")
    func permanentFailureIsNotDue() {
        var table = Self.table(["heart"])
        let error = PeripheralError(.invalid, "BlueZ refused it")

        let after = table.fail(.advertisement("heart"), error, notNow: false, at: Self.start, backoff: Self.backoff)

        #expect(after == .failed)
        #expect(table[.advertisement("heart")]?.status.phase == .failed(error))
        #expect(table.due.isEmpty)
    }

    @Test("leaving the stack drops a pending check and the audit's finding; moving to the same phase changes nothing, not even since")
    func moveClearsCheckAndFinding() {
        let id = RegistrationID("/org/bleadvd/advertisement/heart", generation: Self.old)
        var table = Self.table(["heart"], .on(id, adapter: "hci0"))
        table[.advertisement("heart")]?.checkAt = Self.start.advanced(by: .seconds(1))
        table[.advertisement("heart")]?.status.mismatch = "BlueZ holds 1 advertisement(s) on hci0, bleadvd 2"
        let later = Self.start.advanced(by: .seconds(5))

        let same = table.move(.advertisement("heart"), to: .on(id, adapter: "hci0"), at: later)
        let moved = table.move(.advertisement("heart"), to: .waiting, at: later)

        #expect(!same)
        #expect(moved)
        #expect(table[.advertisement("heart")]?.checkAt == nil)
        #expect(table[.advertisement("heart")]?.status.mismatch == nil)
        #expect(table[.advertisement("heart")]?.status.since == later)
        #expect(table.nextDue == nil)
    }

    @Test("a run of bluetoothd that vanished takes what it answered; what a later run answered stays, and retries wait for BlueZ")
    func lostTakesOnlyItsRun() {
        var table = Self.table(["a", "b", "c"])
        _ = table.move(.advertisement("a"), to: .on(RegistrationID("/a", generation: Self.old), adapter: "hci0"), at: Self.start)
        _ = table.move(.advertisement("b"), to: .on(RegistrationID("/b", generation: Self.new), adapter: "hci0"), at: Self.start)
        _ = table.move(.advertisement("c"), to: .retrying(at: Self.start.advanced(by: .seconds(9)), failures: 1), at: Self.start)

        table.lost(to: Self.old, onAdapter: nil, waitAll: true, at: Self.start)

        #expect(table[.advertisement("a")]?.status.phase == .waiting)
        #expect(table[.advertisement("b")]?.status.phase.id == RegistrationID("/b", generation: Self.new))
        #expect(table[.advertisement("c")]?.status.phase == .waiting)
    }

    @Test("an adapter removed takes only what its run held on that adapter, and leaves retries to their time")
    func adapterRemovedTakesOnlyItsAdapter() {
        var table = Self.table(["a", "b", "c"])
        _ = table.move(.advertisement("a"), to: .on(RegistrationID("/a", generation: Self.old), adapter: "hci0"), at: Self.start)
        _ = table.move(.advertisement("b"), to: .on(RegistrationID("/b", generation: Self.old), adapter: "hci1"), at: Self.start)
        let retry = Table.Phase.retrying(at: Self.start.advanced(by: .seconds(9)), failures: 1)
        _ = table.move(.advertisement("c"), to: retry, at: Self.start)

        table.lost(to: Self.old, onAdapter: "hci1", waitAll: false, at: Self.start)

        #expect(table.advertisementsOnAir(on: "hci0") == [.advertisement("a")])
        #expect(table[.advertisement("b")]?.status.phase == .waiting)
        #expect(table[.advertisement("c")]?.status.phase == retry)
    }

    @Test("the next due instant is the earliest retry or check, and a check is made once")
    func nextDueAndChecks() {
        var table = Self.table(["a", "b"])
        _ = table.move(.advertisement("a"), to: .retrying(at: Self.start.advanced(by: .seconds(3)), failures: 1), at: Self.start)
        table[.advertisement("b")]?.checkAt = Self.start.advanced(by: .seconds(1))
        let now = Self.start.advanced(by: .seconds(1))

        let next = table.nextDue
        let first = table.takeCheck(.advertisement("b"), dueAt: now)
        let again = table.takeCheck(.advertisement("b"), dueAt: now)

        #expect(next == Self.start.advanced(by: .seconds(1)))
        #expect(first)
        #expect(!again)
        #expect(table.nextDue == Self.start.advanced(by: .seconds(3)))
    }

    @Test("what waits for a free slot is what retries after no free instance, in name order")
    func waitingForSlot() {
        var table = Self.table(["b", "a", "c"])
        for name in ["b", "a"] {
            _ = table.fail(.advertisement(name), PeripheralError(.noFreeInstance, "no free slot"), notNow: false, at: Self.start, backoff: Self.backoff)
        }
        _ = table.fail(.advertisement("c"), PeripheralError(.timeout, "no answer"), notNow: false, at: Self.start, backoff: Self.backoff)

        #expect(table.waitingForSlot == [.advertisement("a"), .advertisement("b")])
    }
}
