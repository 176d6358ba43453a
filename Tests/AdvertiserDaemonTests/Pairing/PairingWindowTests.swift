@testable import AdvertiserDaemon
import Peripheral
import PeripheralMocks
import Testing

/// The window as a value: what it answers each request, on a manual clock's instants.
@Suite("The pairing window's decisions")
struct PairingWindowTests {
    typealias Verdict = PairingWindow<ManualClock.Instant>.Verdict
    let start = ManualClock().now
    static let phone = PairingRequest(central: "AA:BB:CC:DD:EE:FF", .authorize)

    @Test("a closed window refuses, and counts nothing")
    func closedRefuses() {
        var window = PairingWindow<ManualClock.Instant>()

        let verdict = window.decide(Self.phone, at: start)

        #expect(verdict == .refuse("no pairing window is open (bleadvctl pair opens one)"))
        #expect(window.pending.isEmpty)
    }

    @Test("an open window lets a central in until its time, not at it")
    func openUntilItsTime() {
        var window = PairingWindow<ManualClock.Instant>()
        window.open(until: start.advanced(by: .seconds(10)), attempts: 3, method: .justWorks)

        let before = window.decide(Self.phone, at: start.advanced(by: .seconds(9)))
        let at = window.decide(PairingRequest(central: "11:22:33:44:55:66", .authorize), at: start.advanced(by: .seconds(10)))

        #expect(before == .allow)
        #expect(at != .allow)
    }

    @Test("the same passkey shown again is the same attempt, not a new one")
    func passkeyAgain() {
        var window = PairingWindow<ManualClock.Instant>()
        window.open(until: start.advanced(by: .seconds(10)), attempts: 1, method: .justWorks)
        let request = PairingRequest(central: "AA:BB:CC:DD:EE:FF", .passkey(42))
        _ = window.decide(request, at: start)

        let again = window.decide(request, at: start)

        #expect(again == .again)
    }

    @Test("a new code from a central awaited supersedes its attempt")
    func newCodeSupersedes() {
        var window = PairingWindow<ManualClock.Instant>()
        window.open(until: start.advanced(by: .seconds(10)), attempts: 3, method: .justWorks)
        _ = window.decide(PairingRequest(central: "AA:BB:CC:DD:EE:FF", .passkey(42)), at: start)

        let superseded = window.supersedes(PairingRequest(central: "AA:BB:CC:DD:EE:FF", .passkey(43)))

        #expect(superseded)
        #expect(window.pending.isEmpty)
    }

    @Test("requests awaited past the time out expire, in address order; the window's end is due first when it is earlier")
    func expiry() {
        var window = PairingWindow<ManualClock.Instant>()
        window.open(until: start.advanced(by: .seconds(5)), attempts: 3, method: .justWorks)
        _ = window.decide(PairingRequest(central: "BB:BB:BB:BB:BB:BB", .authorize), at: start)
        _ = window.decide(PairingRequest(central: "AA:AA:AA:AA:AA:AA", .authorize), at: start)

        let due = window.nextDue(timeout: .seconds(30))
        let early = window.expire(at: start.advanced(by: .seconds(29)), timeout: .seconds(30))
        let late = window.expire(at: start.advanced(by: .seconds(30)), timeout: .seconds(30))

        #expect(due == start.advanced(by: .seconds(5)))
        #expect(early.isEmpty)
        #expect(late == ["AA:AA:AA:AA:AA:AA", "BB:BB:BB:BB:BB:BB"])
    }

    @Test("a passkey window refuses a central that asks for just works without costing an attempt, and stays open for the passkey",
          arguments: [PairingMethod.passkey, .numericComparison])
    func downgradeRefused(method: PairingMethod) {
        var window = PairingWindow<ManualClock.Instant>()
        window.open(until: start.advanced(by: .seconds(60)), attempts: 3, method: method)

        let downgrade = window.decide(Self.phone, at: start)
        let owner = window.decide(PairingRequest(central: "11:22:33:44:55:66", .passkey(42)), at: start)

        #expect(downgrade == .refuse("it asks for just works, a bond without a code (no MITM protection); this window takes \(method.rawValue) only"))
        #expect(window.attemptsLeft(for: Self.phone.central) == 3)
        #expect(window.attemptsLeft(for: "11:22:33:44:55:66") == 2)
        #expect(owner == .allow)
        #expect(window.pending.keys.sorted() == ["11:22:33:44:55:66"])
    }

    @Test("a stranger's just-works requests, however many, do not use up a passkey window's attempts")
    func downgradesDoNotSpoil() {
        var window = PairingWindow<ManualClock.Instant>()
        window.open(until: start.advanced(by: .seconds(60)), attempts: 3, method: .passkey)
        for index in 0..<10 { _ = window.decide(PairingRequest(central: "66:55:44:33:22:\(10 + index)", .authorize), at: start) }

        let owner = window.decide(PairingRequest(central: "11:22:33:44:55:66", .passkey(42)), at: start)

        #expect(owner == .allow)
        #expect(window.attemptsLeft(for: "11:22:33:44:55:66") == 2)
        #expect(window.attemptsLeft(for: "66:55:44:33:22:10") == 3)
    }

    @Test("a stranger's passkey requests (its wrong codes) cost the owner's central none of its attempts: the owner's code is shown after them")
    func strangersAttemptsAreItsOwn() {
        var window = PairingWindow<ManualClock.Instant>()
        window.open(until: start.advanced(by: .seconds(60)), attempts: 2, method: .passkey)
        var stranger: [Verdict] = []
        for code in 1...5 {
            let request = PairingRequest(central: "66:55:44:33:22:11", .passkey(UInt32(code)))
            _ = window.supersedes(request)
            stranger.append(window.decide(request, at: start))
        }

        let owner = window.decide(PairingRequest(central: "11:22:33:44:55:66", .passkey(42)), at: start)

        #expect(stranger == [.allow, .allow, .refuse("it took its 2 attempt(s) in this window already"), .refuse("it took its 2 attempt(s) in this window already"), .refuse("it took its 2 attempt(s) in this window already")])
        #expect(owner == .allow)
    }

    @Test("a window is for one bond: once an awaited central bonds, another's request allowed in the window is no longer awaited, and its bond later is not the window's")
    func oneBondEndsTheOthersAwaited() {
        var window = PairingWindow<ManualClock.Instant>()
        window.open(until: start.advanced(by: .seconds(60)), attempts: 3, method: .passkey)
        _ = window.decide(PairingRequest(central: "66:55:44:33:22:11", .passkey(111_111)), at: start)
        _ = window.decide(PairingRequest(central: "AA:BB:CC:DD:EE:FF", .passkey(222_222)), at: start)

        let owner = window.paired("AA:BB:CC:DD:EE:FF")
        let stranger = window.paired("66:55:44:33:22:11")

        #expect(owner == true)
        #expect(stranger == false)
        #expect(window.pending.isEmpty)
    }

    @Test("a just-works window lets a just-works central in, as it did")
    func justWorksWindowTakesJustWorks() {
        var window = PairingWindow<ManualClock.Instant>()
        window.open(until: start.advanced(by: .seconds(60)), attempts: 3, method: .justWorks)

        let verdict = window.decide(Self.phone, at: start)

        #expect(verdict == .allow)
    }
}
