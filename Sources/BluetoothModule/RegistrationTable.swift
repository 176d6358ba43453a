public import Peripheral

/// Which registration: its kind and, for an advertisement, its name (there is one GATT
/// application and one pairing agent). In order: the advertisements by name, then the
/// application, then the agent.
public struct RegistrationKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// What kind of registration it is.
    public let kind: RegistrationSubject.Kind
    /// The advertisement's name; empty for the application and the agent.
    public let name: String

    /// The advertisement named `name`.
    public static func advertisement(_ name: String) -> Self { Self(kind: .advertisement, name: name) }
    /// The GATT application.
    public static let application = Self(kind: .application, name: "")
    /// The pairing agent.
    public static let agent = Self(kind: .agent, name: "")

    /// The advertisement's name, if it is one.
    public var advertisement: String? { kind == .advertisement ? name : nil }

    /// By kind (advertisements first), then by name.
    public static func < (a: Self, b: Self) -> Bool { (a.kind, a.name) < (b.kind, b.name) }

    /// How the log names it: the advertisement's name, `GATT`, or `pairing`.
    public var description: String {
        switch kind {
        case .advertisement: name
        case .application: "GATT"
        case .agent: "pairing"
        }
    }
}

extension Dictionary where Key == RegistrationKey {
    /// The advertisements' entries, by name.
    public var advertisements: [String: Value] {
        reduce(into: [:]) { result, entry in
            if let name = entry.key.advertisement { result[name] = entry.value }
        }
    }
}

/// What the module keeps registered with the stack and where each registration is, as a value
/// (as ``StackView`` is for the stack): the subjects by key, their statuses and the in-place
/// updates waiting to be confirmed; the phases they move through, what a failure leads to, and
/// which are due. The module makes the calls and logs; this decides.
struct RegistrationTable<Instant: InstantProtocol & Sendable>: Sendable where Instant.Duration == Duration {
    typealias Key = RegistrationKey
    typealias Status = RegistrationStatus<Instant>
    typealias Phase = Status.Phase

    /// One thing kept registered (what it is, ``RegistrationSubject``: all else about it is the
    /// same for every kind), and where it is.
    struct Registration: Sendable {
        var subject: RegistrationSubject
        var status: Status
        /// When BlueZ is to be asked whether it still holds it after an update in place, if it
        /// is to be (the advertisement's only).
        var checkAt: Instant?
    }

    /// What a failed registration comes to.
    enum AfterFailure: Equatable, Sendable {
        /// It waits for an event: BlueZ or an adapter coming (`adapterGone`: the adapter in use
        /// is no longer to be trusted), or the stack view's leave.
        case waiting(adapterGone: Bool)
        /// A transient failure: tried again then, after `delay`.
        case retrying(at: Instant, delay: Duration)
        /// Refused for good: nothing until it is changed.
        case failed
    }

    private var registrations: [Key: Registration] = [:]

    /// The registration of `key`, if it is kept.
    subscript(key: Key) -> Registration? {
        get { registrations[key] }
        set { registrations[key] = newValue }
    }

    /// The keys, in order.
    var keys: [Key] { registrations.keys.sorted() }

    /// Every registration's status.
    var statuses: [Key: Status] { registrations.mapValues(\.status) }

    /// The key registered as `id`.
    func key(of id: RegistrationID) -> Key? {
        registrations.first { $0.value.status.phase.id == id }?.key
    }

    /// The advertisements on air on `adapter`, in order.
    func advertisementsOnAir(on adapter: String) -> [Key] {
        keys.filter { key in
            guard key.kind == .advertisement, case .on(_, adapter)? = registrations[key]?.status.phase else { return false }
            return true
        }
    }

    /// The advertisements paused by a link on `adapter` (on any adapter when nil), in order.
    func paused(on adapter: String?) -> [Key] {
        keys.filter { key in
            guard case .paused(let on)? = registrations[key]?.status.phase else { return false }
            return adapter == nil || adapter == on
        }
    }

    /// What should be registered and is waiting or retrying: what a reconciliation tries.
    var due: [Key] {
        keys.filter { key in
            guard let status = registrations[key]?.status, status.desired else { return false }
            switch status.phase {
            case .waiting, .retrying: return true
            case .off, .on, .failed, .paused: return false
            }
        }
    }

    /// What retries for want of a free advertising slot, in order.
    var waitingForSlot: [Key] {
        keys.filter { key in
            guard case .retrying? = registrations[key]?.status.phase else { return false }
            return registrations[key]?.status.lastError?.code == .noFreeInstance
        }
    }

    /// The earliest retry or check, if any.
    var nextDue: Instant? {
        registrations.values.flatMap { registration -> [Instant] in
            var due = registration.checkAt.map { [$0] } ?? []
            if case .retrying(let at, _) = registration.status.phase { due.append(at) }
            return due
        }.min()
    }

    /// Moves `key` to `phase` at `now`; one that leaves the stack has no check pending and no
    /// audit's finding. Returns whether it moved.
    @discardableResult
    mutating func move(_ key: Key, to phase: Phase, at now: Instant) -> Bool {
        guard let registration = registrations[key], registration.status.phase != phase else { return false }
        if phase.id == nil {
            registrations[key]!.checkAt = nil
            registrations[key]!.status.mismatch = nil
        }
        registrations[key]!.status.phase = phase
        registrations[key]!.status.since = now
        return true
    }

    /// Records `error` as `key`'s failure at `now` and moves it on: to wait for an event (`notNow`:
    /// the stack view refused; or no adapter, or no BlueZ), to retry after `backoff` of the
    /// failures in a row (a transient error), or to fail for good. Nil when `key` is not kept.
    mutating func fail(_ key: Key, _ error: PeripheralError, notNow: Bool, at now: Instant, backoff: (Int) -> Duration) -> AfterFailure? {
        guard let status = registrations[key]?.status else { return nil }
        registrations[key]!.status.lastError = error
        let after: AfterFailure
        let phase: Phase
        switch error.code {
        case _ where notNow:
            (after, phase) = (.waiting(adapterGone: false), .waiting)
        case .noAdapter, .bluezUnavailable:
            (after, phase) = (.waiting(adapterGone: true), .waiting)
        case _ where error.isTransient:
            let failures = (status.phase.failures ?? 0) + 1
            let delay = backoff(failures)
            let at = now.advanced(by: delay)
            (after, phase) = (.retrying(at: at, delay: delay), .retrying(at: at, failures: failures))
        default:
            (after, phase) = (.failed, .failed(error))
        }
        move(key, to: phase, at: now)
        return after
    }

    /// The run `generation` of bluetoothd, or its adapter `adapter` (any when nil), dropped what
    /// it held: what that run held is no longer registered, and what should be waits for BlueZ
    /// or the adapter to come back; so does a retry when `waitAll` (the run there vanished). A
    /// registration a later run answered stays.
    mutating func lost(to generation: StackGeneration, onAdapter adapter: String?, waitAll: Bool, at now: Instant) {
        for key in keys {
            guard let status = registrations[key]?.status else { continue }
            switch status.phase {
            case .on(let id, let on) where id.generation == generation && (adapter == nil || adapter == on):
                move(key, to: status.desired ? .waiting : .off, at: now)
            case .retrying where waitAll:
                move(key, to: .waiting, at: now)
            default:
                break
            }
        }
    }

    /// Whether `key`'s check is due at `now`; a check due is taken off the table (it is made
    /// once).
    mutating func takeCheck(_ key: Key, dueAt now: Instant) -> Bool {
        guard let at = registrations[key]?.checkAt, at <= now else { return false }
        registrations[key]!.checkAt = nil
        return true
    }
}
