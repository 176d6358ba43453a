import Peripheral

/// When centrals may pair, as a value apart from its effects: a window open until an instant,
/// the attempts each central has made in it, and the requests whose outcome is awaited.
///
/// Attempts are counted per central address, not per window: nothing tells the owner's
/// central from a stranger's but the code, so a window-wide count let a stranger in range
/// spend the owner's attempts with wrong codes (or comparisons the owner answered no) and lock
/// the owner out. A central's requests cost its own attempts alone. A stranger that changes
/// its address gets new ones, as it could anyway: each attempt is a fresh 6-digit code it
/// cannot see (passkey) or one the owner must confirm (numeric comparison). The daemon asks it
/// about each request of the agent, and acts on what it answers (logs, signals, BlueZ's
/// `Pairable`).
struct PairingWindow<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    /// What to do with a request.
    enum Verdict: Hashable, Sendable {
        /// Go on: a new attempt, counted.
        case allow
        /// Go on: the same request again (bluetoothd shows a passkey anew as the central types).
        case again
        /// Refuse it, for this reason.
        case refuse(String)
    }

    /// Until when the window is open; nil while closed.
    private(set) var until: Instant?
    /// How many requests the window takes from each central.
    private(set) var attempts = 0
    /// The requests each central made in this window (counted ones: not a code shown again,
    /// not a refused downgrade).
    private(set) var tries: [String: Int] = [:]
    /// The method it was opened for: a passkey or numeric-comparison window takes no bond
    /// without MITM protection.
    private(set) var method = PairingMethod.passkey
    /// Who opened it (the bus's unique name of the caller of `Pair`): its events and codes go
    /// to it alone. Kept after the window closes, for the requests still awaited.
    private(set) var opener: String?
    /// The requests allowed whose outcome is awaited, by central: since when, and their code.
    private(set) var pending: [String: (since: Instant, code: String?)] = [:]

    /// Whether it is open at `now`.
    func isOpen(at now: Instant) -> Bool {
        until.map { now < $0 } ?? false
    }

    /// Opens it for `opener` until `until`, taking `attempts` requests of `method`.
    mutating func open(until: Instant, attempts: Int, method: PairingMethod, opener: String? = nil) {
        self.until = until
        self.attempts = attempts
        tries = [:]
        self.method = method
        self.opener = opener
    }

    /// Closes it; requests under way are still awaited.
    mutating func close() {
        until = nil
        tries = [:]
    }

    /// What to do with `request` at `now`.
    mutating func decide(_ request: PairingRequest, at now: Instant) -> Verdict {
        if let awaited = pending[request.central], awaited.code != nil, awaited.code == request.code { return .again }
        guard isOpen(at: now) else { return .refuse("no pairing window is open (bleadvctl pair opens one)") }
        // A central that announces no input and no output, or asks for no MITM protection,
        // gets just works from the stack whatever the agent's capability: in a window opened
        // for a code that is a downgrade, an attacker's way in before the owner types it. It
        // costs no attempt: a stranger's downgrades would otherwise use the owner's up.
        guard request.method != .justWorks || method == .justWorks else {
            return .refuse("it asks for just works, a bond without a code (no MITM protection); this window takes \(method.rawValue) only")
        }
        guard attemptsLeft(for: request.central) > 0 else {
            return .refuse("it took its \(attempts) attempt(s) in this window already")
        }
        if tries[request.central] == nil, tries.count >= Self.mostCentrals { forgetIdleCentrals() }
        tries[request.central, default: 0] += 1
        pending[request.central] = (now, request.code)
        return .allow
    }

    /// Whether `request` starts a new attempt of a central whose last one is still awaited (a
    /// new code: the last pairing failed, and the stack tries again); that one is forgotten.
    mutating func supersedes(_ request: PairingRequest) -> Bool {
        guard let awaited = pending[request.central], awaited.code == nil || awaited.code != request.code else { return false }
        pending[request.central] = nil
        return true
    }

    /// How many more requests the window takes from `central`.
    func attemptsLeft(for central: String) -> Int {
        attempts - tries[central, default: 0]
    }

    /// The most centrals whose attempts a window counts; past them the counts of centrals with
    /// no request awaited are forgotten. Forgetting gives a central its attempts back, never
    /// takes the owner's: a stranger that changes its address gets new ones anyway.
    static var mostCentrals: Int { 256 }

    /// Forgets the counts of centrals whose requests are not awaited.
    private mutating func forgetIdleCentrals() {
        tries = tries.filter { pending[$0.key] != nil }
    }

    /// `central` paired; true when it was awaited (it paired in this window). A window is for
    /// one bond: its bond ends every other request awaited, so that a stranger's attempt let in
    /// beside the owner's is never recorded as the window's when its bond comes later (under
    /// another agent: any local user may register one).
    mutating func paired(_ central: String) -> Bool {
        guard pending.removeValue(forKey: central) != nil else { return false }
        pending = [:]
        return true
    }

    /// Forgets the request of `central` (refused after it was allowed).
    mutating func drop(_ central: String) {
        pending[central] = nil
    }

    /// The centrals whose requests got no bond within `timeout`, forgotten.
    mutating func expire(at now: Instant, timeout: Duration) -> [String] {
        let late = pending.filter { $0.value.since.advanced(by: timeout) <= now }.keys.sorted()
        for central in late { pending[central] = nil }
        return late
    }

    /// When something is next due: the window's end, or an awaited request's time out.
    func nextDue(timeout: Duration) -> Instant? {
        (pending.values.map { $0.since.advanced(by: timeout) } + [until].compactMap { $0 }).min()
    }
}
