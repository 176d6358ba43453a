@testable import AdvertiserDaemon
import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import Events
import Foundation
import Logging
import Peripheral
import PeripheralMocks
import Synchronization
import TestSupport
import Testing

/// The pairing component in process, through its ports: the module over the mock, an announcer
/// that records, the manual clock. No bus: what reaches a client over D-Bus is PairingTests'.
@Suite("The pairing component", .timeLimit(.minutes(3)))
struct PairingComponentTests {
    typealias Component = Pairing<ManualClock>
    static let phone = "AA:BB:CC:DD:EE:01"

    /// What the component asked its port to announce, in order.
    final class Announcements: PairingAnnouncing {
        let said = Mutex<[String]>([])

        func emit<Signal: ControlSignal>(_ signal: Signal, to destination: String?) async {
            let pairing = Signal.name == ControlAPI.Pairing.name ? ControlAPI.Pairing(body: signal.body) : nil
            let line = pairing.map { [destination ?? "(everyone)", $0.event, $0.central, $0.detail] } ?? [Signal.name, "(unexpected)"]
            said.withLock { $0.append(line.filter { !$0.isEmpty }.joined(separator: " ")) }
        }

        var all: [String] { said.withLock { $0 } }

        /// The openers that left the bus, and those waiting for one to leave.
        let left = Mutex<(gone: Set<String>, waiting: [String: [CheckedContinuation<Void, Never>]])>(([], [:]))

        func departure(of opener: String) async {
            await withCheckedContinuation { (going: CheckedContinuation<Void, Never>) in
                let gone = left.withLock { state in
                    if state.gone.contains(opener) { return true }
                    state.waiting[opener, default: []].append(going)
                    return false
                }
                if gone { going.resume() }
            }
        }

        /// `opener` leaves the bus, as a bleadvctl pair ended (Ctrl-C, killed) does.
        func leave(_ opener: String) {
            let waiting = left.withLock { state in
                state.gone.insert(opener)
                return state.waiting.removeValue(forKey: opener) ?? []
            }
            for going in waiting { going.resume() }
        }
    }

    /// A component over a mock whose agent registers, with `config`, its agent offered; and
    /// the loop it runs on, which the test keeps. Its bonds are recorded in a scratch folder;
    /// its journal lines are kept.
    struct Harness {
        let mock = MockPeripheralManager()
        let clock = ManualClock()
        let announcements = Announcements()
        let logs = LogLines()
        let folder: ScratchFolder
        let record: BondRecord
        let loop: EventLoop
        let pairing: Component

        init(_ config: PairingConfig = PairingConfig(method: .justWorks, window: .seconds(60), attempts: 1)) async throws {
            folder = try ScratchFolder("pairing")
            record = BondRecord(directory: folder.url.appendingPathComponent("state").path)
            mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0")])))
            mock.scriptRegisterAgent(.always(.success(RegistrationID("/org/bleadvd/agent"))))
            mock.scriptUnregisterAgent(.always(.success(())))
            mock.scriptSetPairable(.always(.success(())))
            mock.scriptAudit(.always(.success([])))
            loop = try EventLoop.onNewThread(name: "pairing-test")
            let module = BluetoothModule(manager: mock, clock: clock, auditDelay: nil)
            pairing = Pairing(
                config: config, bondNeeded: true, configPath: "/etc/bleadvd.toml", module: module, clock: clock,
                announcer: announcements, bondRecord: record, logger: logs.logger(), executor: loop)
            await pairing.offer()
        }

        /// `central` bonds in a window opened for it, as BlueZ tells it.
        func bond(_ central: String) async throws {
            _ = try await pairing.pair(for: 60, by: ":1.7")
            _ = await pairing.decide(PairingRequest(central: central, .authorize))
            await pairing.take(.paired(central: central, adapter: "hci0"))
        }

        /// The journal's lines about bonds that ended in BlueZ.
        var bondsEnded: [String] { logs.all.filter { $0.contains("ended in BlueZ") } }
    }

    @Test("a window's events go through the port to its opener alone; a second opener's window tells the first it is over")
    func eventsGoToTheOpener() async throws {
        let h = try await Harness()
        _ = try await h.pairing.pair(for: 30, by: ":1.7")

        _ = try await h.pairing.pair(for: 30, by: ":1.8")

        #expect(h.announcements.all == [":1.7 opened", ":1.7 closed another bleadvctl pair opened a window", ":1.8 opened"])
    }

    @Test("a central let in that does not bond within the timeout has failed, on the injected clock, and the opener is told")
    func unbondedCentralFails() async throws {
        let h = try await Harness()
        _ = try await h.pairing.pair(for: 60, by: ":1.7")
        #expect(await h.pairing.decide(PairingRequest(central: Self.phone, .authorize)))

        h.clock.advance(by: Component.timeout)
        await h.pairing.timerFired(h.clock.now)

        #expect(h.announcements.all.contains(":1.7 failed \(Self.phone) no bond within 30 s: a wrong code, or it gave up"))
    }

    @Test("a window whose time ran out closes the adapter to new bonds")
    func windowRunsOut() async throws {
        let h = try await Harness()
        _ = try await h.pairing.pair(for: 10, by: ":1.7")

        h.clock.advance(by: .seconds(10))
        await h.pairing.timerFired(h.clock.now)

        #expect(h.mock.calls.pairable.map(\.pairable).suffix(2) == [true, false])
        #expect(h.announcements.all.last == ":1.7 closed its time ran out")
    }

    @Test("a reloaded config with another method closes an open window and says why; the agent is offered for the new method")
    func reloadWithAnotherMethodCloses() async throws {
        let h = try await Harness()
        _ = try await h.pairing.pair(for: 60, by: ":1.7")

        await h.pairing.reconfigure(PairingConfig(method: .passkey), bondNeeded: true)

        #expect(h.announcements.all.last == ":1.7 closed the reloaded config pairs by passkey")
        #expect(h.mock.calls.registeredAgents.map(\.method) == [.justWorks, .passkey])
    }

    @Test("a comparison waits for the opener's Confirm; another caller's is refused, and the comparison still waits")
    func onlyTheOpenerConfirms() async throws {
        let h = try await Harness(PairingConfig(method: .numericComparison, window: .seconds(60), attempts: 1))
        _ = try await h.pairing.pair(for: 60, by: ":1.7")
        let asking = Task { await h.pairing.decide(PairingRequest(central: Self.phone, .confirm(123_456))) }
        try await eventually("the comparison waits for an answer") { await !h.pairing.confirmations.isEmpty }

        let stranger = await #expect(throws: PeripheralError.self) { try await h.pairing.confirm(Self.phone, matches: true, by: ":1.9") }
        try await h.pairing.confirm(Self.phone, matches: true, by: ":1.7")

        #expect(stranger?.code == .accessDenied)
        #expect(await asking.value)
    }
    @Test("a stranger's comparison left unanswered is refused after its 30 s, so bluetoothd's one agent (busy meanwhile) takes the owner's request then")
    func unansweredComparisonFreesTheAgent() async throws {
        let h = try await Harness(PairingConfig(method: .numericComparison, window: .seconds(120), attempts: 3))
        _ = try await h.pairing.pair(for: 120, by: ":1.7")
        let stranger = Task { await h.pairing.decide(PairingRequest(central: "66:66:66:66:66:66", .confirm(111_111))) }
        try await eventually("the stranger's comparison waits for an answer") { await !h.pairing.confirmations.isEmpty }

        h.clock.advance(by: Component.timeout)
        await h.pairing.timerFired(h.clock.now)
        let owner = Task { await h.pairing.decide(PairingRequest(central: Self.phone, .confirm(222_222))) }
        try await eventually("the owner's comparison waits for an answer") { await h.pairing.confirmations[Self.phone] != nil }
        try await h.pairing.confirm(Self.phone, matches: true, by: ":1.7")

        #expect(await stranger.value == false)
        #expect(await owner.value)
    }

    @Test("a bonded central whose device is removed in BlueZ (by anyone) is no longer admitted to secured values, and the record no longer lists it")
    func removedBondIsNoLongerAdmitted() async throws {
        let h = try await Harness()
        try await h.bond(Self.phone)
        let admittedBefore = h.record.admits(Self.phone)

        await h.pairing.take(.bondEnded(central: Self.phone, adapter: "hci0", .removed))

        #expect(admittedBefore)
        #expect(!h.record.admits(Self.phone))
        #expect(try h.record.centrals() == [])
    }

    @Test("a bonded central unpaired in BlueZ is no longer admitted to secured values")
    func unpairedBondIsNoLongerAdmitted() async throws {
        let h = try await Harness()
        try await h.bond(Self.phone)

        await h.pairing.take(.bondEnded(central: Self.phone, adapter: "hci0", .unpaired))

        #expect(!h.record.admits(Self.phone))
    }

    @Test("the journal says once that a bond ended in BlueZ, however many of BlueZ's signals tell it")
    func endedBondIsLoggedOnce() async throws {
        let h = try await Harness()
        try await h.bond(Self.phone)

        await h.pairing.take(.bondEnded(central: Self.phone, adapter: "hci0", .unpaired))
        await h.pairing.take(.bondEnded(central: Self.phone, adapter: "hci0", .removed))

        #expect(h.bondsEnded == ["notice: pairing: bond with \(Self.phone) ended in BlueZ (unpaired): no longer admitted"])
    }

    @Test("a central that pairs with the address of an ended bond outside a window (another program's agent) is refused secured values")
    func impostorAfterAnEndedBondIsRefused() async throws {
        let h = try await Harness()
        try await h.bond(Self.phone)
        await h.pairing.take(.bondEnded(central: Self.phone, adapter: "hci0", .removed))

        await h.pairing.take(.paired(central: Self.phone, adapter: "hci0"))

        #expect(!h.record.admits(Self.phone))
        #expect(try h.record.centrals() == [])
    }

    @Test("the end of a bond bleadvd never admitted (a desktop's keyboard, a device seen in a scan) is not told in the journal")
    func endOfAnotherBondIsNotTold() async throws {
        let h = try await Harness()
        try await h.bond(Self.phone)

        await h.pairing.take(.bondEnded(central: "66:66:66:66:66:66", adapter: "hci0", .removed))

        #expect(h.bondsEnded.isEmpty)
        #expect(h.record.admits(Self.phone))
    }

    @Test("the window closes when the bleadvctl pair that opened it leaves the bus (Ctrl-C, killed): no one else sees its codes, and the adapter takes no bond meanwhile")
    func openerLeavingClosesTheWindow() async throws {
        let h = try await Harness(PairingConfig(method: .passkey, window: .seconds(600), attempts: 3))
        let running = Task { await h.pairing.run() }
        defer { running.cancel() }
        _ = try await h.pairing.pair(for: 600, by: ":1.7")

        h.announcements.leave(":1.7")

        try await eventually("the window to close") { h.logs.all.contains { $0.contains("pairing: window closed: the bleadvctl pair that opened it left") } }
        #expect(h.mock.calls.pairable.map(\.pairable).last == false)
        #expect(await h.pairing.decide(PairingRequest(central: Self.phone, .passkey(42_137))) == false)
    }
}
