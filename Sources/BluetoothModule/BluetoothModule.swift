public import Logging
public import Peripheral
import Support

/// The domain: for each named advertisement, what should be on air and what is, kept in step
/// through any `PeripheralManaging`.
///
/// - `on`/`off` are idempotent: on twice is one registration, off when off is no call.
/// - Events reconcile: BlueZ gone means nothing that run of bluetoothd held is on air; BlueZ or
///   an adapter back means everything that should be on is registered again; `Release`
///   re-registers unless the advertisement's own `timeout` ran out. Each registration knows
///   the run of bluetoothd that answered it (`StackGeneration`), and an event takes away
///   exactly what its run held: events arrive after calls made meanwhile, which a newer run
///   may have answered. What the module knows of the stack is one value, ``StackView``, which
///   decides whether registering may be tried now.
/// - Transient failures are retried with backoff on the injected clock. The module owns the
///   timer: it sleeps until ``nextRetry`` (or ``nextAudit``) and calls ``retryDue()`` and
///   ``auditDue()`` itself (a test may call them after advancing a manual clock, too).
///   Permanent failures wait for a new `on`.
/// - An in-place update is confirmed ``updateCheckDelay`` later: if BlueZ dropped the
///   advertisement without a word (5.66 to 5.73 do when the kernel refuses an update), it is
///   registered again and the log says so. One check per burst of updates; none while idle.
/// - The module checks itself: ``auditDelay`` after the last change it asks the manager what
///   the stack holds on each adapter against what it registered (`PeripheralManaging.audit()`),
///   registers again what is missing, unregisters what it holds that no advertisement tracks,
///   and reports what it cannot repair (``discrepancies()``, and a warning in the log). One
///   audit per burst of changes; none while idle.
/// - Every change of state is announced on ``changes()``.
/// - The GATT services (``serve(_:)``) are one application, kept registered as advertisements
///   are kept on air: again after BlueZ or the adapter comes back, retried on the clock; a
///   change of values only goes to BlueZ in place (``setValue(_:of:)``), as do centrals' writes.
///
/// Operations run one at a time, so an event never interleaves with a registration. A task
/// waiting for its turn can be cancelled: it leaves the queue and throws `CancellationError`.
public actor BluetoothModule<C: Clock> where C.Duration == Duration {
    /// The status of one registration (an advertisement, the GATT application), with instants
    /// of this module's clock.
    public typealias Status = RegistrationStatus<C.Instant>
    /// Where a registration is.
    public typealias Phase = Status.Phase

    /// One thing the module keeps registered with the stack, and where it is.
    typealias Registration = RegistrationTable<C.Instant>.Registration
    /// Which registration.
    typealias Key = RegistrationKey

    let manager: any PeripheralManaging
    let clock: C
    let configuredAdapter: AdapterChoice?
    let powerOnAllowed: Bool
    let retry: RetryPolicy
    let counters: (any EncryptionCounters)?
    let logger: Logger
    /// How long after the last change the stack is audited; nil for never.
    public nonisolated let auditDelay: Duration?
    /// Where the module's own tasks run; nil for Swift's global executor.
    nonisolated let executor: (any TaskExecutor)?
    /// What is kept registered, and where each is.
    var registrations = RegistrationTable<C.Instant>()
    /// BlueZ and the adapters as the events described them.
    var stack = StackView<C.Instant>()
    /// One operation at a time, in the order called.
    let turnstile = Turnstile()
    /// The operation through the turnstile, and since when: named in the journal when it keeps
    /// the others waiting (``longTurn``).
    var holder: (operation: String, since: C.Instant)?
    var nextListener = 0
    /// The one timer, for the earliest retry or audit, and the task sleeping until it.
    var retryAlarm = Alarm<C.Instant>()
    var retryTask: Task<Void, Never>?
    /// When the next audit is due (after the last change), how many in a row repaired
    /// something, and what the last found and could not repair.
    var audits = AuditState<C.Instant>()
    /// Whether the changes about to be announced are the audit's own repairs, which schedule
    /// their own recount.
    var auditing = false
    var listeners: [Int: AsyncStream<[RegistrationKey: Status]>.Continuation] = [:]
    /// Whether the adapter is to take new bonds (a pairing window is open); sent again after
    /// each registration of the agent, which makes BlueZ's adapters pairable.
    var pairable = false
    var announced: [RegistrationKey: Status] = [:]
    /// The links up on each adapter, by the other side's address, as the events told them.
    var links: [String: Set<String>] = [:]
    /// When what the links on each adapter took off air is to be registered again, and when it
    /// last was (``linkSettle``, ``relinkSpacing``).
    var relinkAt: [String: C.Instant] = [:]
    var lastRelink: [String: C.Instant] = [:]
    /// When the kernel's turns among the advertisements on each adapter without extended
    /// advertising are to be started again, after a link there ended (``rotationRestartDelay``).
    var rotationRestartAt: [String: C.Instant] = [:]
    /// The advertisements kept off air while they should be on (``hold(_:)``): a rotation
    /// through fewer slots than advertisements gives them their turns.
    var held: Set<String> = []

    /// An operation that holds its turn this long, or waits this long for it, is logged, by
    /// name: BlueZ answers the module's calls in milliseconds, so a turn this long is a stack
    /// that is stuck or slow, and what waits behind it (a value set, a link's end) waits too.
    public static var longTurn: Duration { .seconds(1) }

    /// How long after an in-place update the module asks BlueZ whether it still holds the
    /// advertisement: long enough for bluetoothd to have heard the kernel's answer.
    public static var updateCheckDelay: Duration { .seconds(1) }

    /// How long after the last change the module audits what the stack holds, unless told
    /// otherwise: long enough for a burst of changes to be over.
    public static var standardAuditDelay: Duration { .seconds(1) }

    /// How many audits in a row may repair something before the module stops auditing until
    /// the next change: a difference that comes back after each repair is reported, not fought.
    public static var maximumRepairingAudits: Int { 3 }

    /// How long a new link is left alone before what it took off air is registered again:
    /// the central's service discovery and the peripheral's own (bluetoothd's) come first, and
    /// a link over by then needs nothing (the kernel enables the set again at the disconnect).
    public static var linkSettle: Duration { .seconds(2) }

    /// The least time between two such registrations on one adapter: a central in radio range
    /// that connects again and again costs at most one per this, whatever its rate.
    public static var relinkSpacing: Duration { .seconds(5) }

    /// How long after a link ends, on an adapter without extended advertising, the module starts
    /// the kernel's turns among its advertisements again (it sends one of them again): after the
    /// kernel's own handling of the disconnect and of a turn ending with it; each link that ends
    /// meanwhile moves it on, so that links ending together cost one.
    public static var rotationRestartDelay: Duration { .milliseconds(500) }

    /// How long an adapter settles after it is reported powered off, unless its Powered event
    /// comes first: nothing is tried on it for this long (bluetoothd powers every adapter off as
    /// it stops, and vanishes within this time). One found changing its power when the module
    /// asked to power it on (bluetoothd powers every adapter on as it starts) settles for the
    /// retry's backoff.
    public static var powerOffSettle: Duration { .seconds(1) }

    /// A module over a peripheral manager.
    /// - Parameters:
    ///   - manager: the Bluetooth stack (`BlueZPeripheralManager`, or a mock in tests).
    ///   - clock: the clock retries are scheduled on.
    ///   - adapter: the adapter to use, by name (`hci0`) or by address (`AdapterChoice`, Peripheral); nil
    ///     for the first that can advertise.
    ///   - powerOn: whether to power the adapter on when it is off.
    ///   - retry: the backoff for transient failures.
    ///   - counters: where encrypted BTHome's counters come from; without it an advertisement
    ///     with a `bthomeKey` fails to register.
    ///   - auditDelay: how long after the last change the module audits what the stack holds
    ///     (``auditDue()``); nil for never.
    ///   - logger: where what happens is logged.
    ///   - executor: where the module's own tasks run (its retry timer, a cancelled waiter
    ///     leaving its turn); nil for Swift's global executor. bleadvd gives its one event
    ///     loop, and calls the module from tasks that prefer it: the actor then runs there too.
    public init(
        manager: any PeripheralManaging, clock: C, adapter: String? = nil, powerOn: Bool = true,
        retry: RetryPolicy = .standard, counters: (any EncryptionCounters)? = nil,
        auditDelay: Duration? = standardAuditDelay,
        logger: Logger = Logger(label: "bleadvd.module"), executor: (any TaskExecutor)? = nil
    ) {
        self.executor = executor
        self.auditDelay = auditDelay
        self.manager = manager
        self.clock = clock
        self.configuredAdapter = adapter.map(AdapterChoice.init)
        self.powerOnAllowed = powerOn
        self.retry = retry
        self.counters = counters
        self.logger = logger
    }

    deinit {
        retryTask?.cancel()
        for listener in listeners.values { listener.finish() }
    }

    // MARK: What the user asks

    /// Sets the advertisements by name. New names start off; a changed advertisement that is on
    /// air is updated in place; a name no longer given is taken off air and forgotten.
    public func configure(_ advertisements: [String: Advertisement]) async {
        try? await exclusively {
            for key in registrations.keys {
                guard let name = key.advertisement, advertisements[name] == nil else { continue }
                await takeOff(key)
                registrations[key] = nil
            }
            for (name, advertisement) in advertisements.sorted(by: { $0.key < $1.key }) {
                guard registrations[.advertisement(name)] != nil else {
                    registrations[.advertisement(name)] = Registration(
                        subject: .advertisement(advertisement), status: Status(desired: false, phase: .off, since: clock.now))
                    continue
                }
                await replace(name, with: advertisement)
            }
        }
    }

    /// Replaces one advertisement. When it is on air it is changed in place, without going off
    /// air (a change BlueZ cannot follow in place, a structured scan response field without
    /// `--experimental`, registers it again).
    /// - Throws: `PeripheralError` `unknownName`; `CancellationError` as for ``on(_:)``.
    public func update(_ name: String, to advertisement: Advertisement) async throws {
        try await exclusively {
            guard registrations[.advertisement(name)] != nil else { throw PeripheralError.unknownName(name) }
            await replace(name, with: advertisement)
        }
    }

    func replace(_ name: String, with advertisement: Advertisement) async {
        let key = Key.advertisement(name)
        guard let registration = registrations[key], case .advertisement(let old) = registration.subject,
              old != advertisement else { return }
        registrations[key]!.subject = .advertisement(advertisement)
        switch registration.status.phase {
        case .on(let id, let adapter):
            do {
                let sent = advertisement.bthomeKey == nil ? advertisement : try sealed(advertisement, for: await capabilities(of: adapter))
                try await manager.updateAdvertisement(id, to: sent)
                registrations[key]?.checkAt = clock.now.advanced(by: Self.updateCheckDelay)
            } catch let error as PeripheralError where error.code == .rejected {
                // A change the stack cannot follow in place (a structured scan response field,
                // which BlueZ follows only with --experimental): planned, not a failure.
                logger.info("\(name): \(error.message); registering it again")
                await takeOff(key)
                await attempt(key)
            } catch {
                logger.warning("updating \(name) in place failed (\(error)); registering it again")
                await takeOff(key)
                await attempt(key)
            }
        case .failed where registration.status.desired:
            move(key, to: .waiting)
            await attempt(key)
        case .off, .waiting, .retrying, .failed, .paused:
            break
        }
    }

    /// Puts an advertisement on air and returns once BlueZ registered it. When it is on air
    /// already, nothing is called.
    /// - Throws: `PeripheralError`: `unknownName`, or why it could not be registered (for a
    ///   transient reason the module keeps trying; see ``status()``); `CancellationError` when
    ///   the task is cancelled while it waits for its turn.
    public func on(_ name: String) async throws {
        try await exclusively {
            let key = Key.advertisement(name)
            guard let registration = registrations[key] else { throw PeripheralError.unknownName(name) }
            registrations[key]!.status.desired = true
            switch registration.status.phase {
            case .on, .paused: return
            case .off, .failed: move(key, to: .waiting)
            case .waiting, .retrying: break
            }
            if let failure = await attempt(key) { throw failure }
        }
    }

    /// Takes an advertisement off air. When it is off already, nothing is called.
    /// - Throws: `PeripheralError`: `unknownName`, or why BlueZ could not unregister it
    ///   (it is still on air then); `CancellationError` as for ``on(_:)``.
    public func off(_ name: String) async throws {
        try await exclusively {
            let key = Key.advertisement(name)
            guard registrations[key] != nil else { throw PeripheralError.unknownName(name) }
            registrations[key]!.status.desired = false
            let wasOn = registrations[key]!.status.phase.id != nil
            try await takeOffThrowing(key)
            if wasOn { await slotFreed() }
        }
    }

    /// The operation that has the turn with BlueZ now, for how long it has had it, and how many
    /// wait behind it; nil when none has.
    public var turn: (operation: String, held: Duration, waiting: Int)? {
        holder.map { ($0.operation, $0.since.duration(to: clock.now), turnstile.waiting) }
    }

    /// The status of every registration: the advertisements (by name), the GATT application,
    /// the pairing agent. `status().advertisements` has the advertisements' by name.
    public func status() -> [RegistrationKey: Status] {
        registrations.statuses
    }

    /// The oldest call to the stack still waiting for its answer after half a second, if any: since
    /// when ``status()`` may be behind the stack. It waits for no turn.
    public func unanswered() async -> UnansweredCall? {
        await manager.unanswered()
    }

    /// Every change of ``status()`` from now on, latest first: a consumer that falls behind
    /// gets the newest state, not every step.
    public func changes() -> AsyncStream<[RegistrationKey: Status]> {
        let (stream, continuation) = AsyncStream<[RegistrationKey: Status]>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = nextListener
        nextListener += 1
        listeners[id] = continuation
        continuation.onTermination = { [weak self] _ in
            Task(executorPreference: self?.executor) { await self?.removeListener(id) }
        }
        return stream
    }

    /// What the module knows of BlueZ and the adapters.
    public func stackView() -> StackView<C.Instant> {
        stack
    }

    /// The earliest scheduled retry, update check or end of an adapter's settling, if any.
    public var nextRetry: C.Instant? {
        let due = [registrations.nextDue, stack.nextSettle].compactMap { $0 }
        return (due + relinkAt.values + rotationRestartAt.values).min()
    }

    /// When the next audit is due, if one is (``auditDelay`` after the last change).
    public var nextAudit: C.Instant? {
        audits.due
    }

    /// Retries every registration whose retry time has come, confirms with BlueZ those
    /// updated in place whose check is due, and reconciles when an adapter powered off has
    /// settled.
    public func retryDue() async {
        try? await exclusively {
            let now = clock.now
            if !stack.settled(at: now).isEmpty { await reconcile() }
            for (adapter, at) in relinkAt.sorted(by: { $0.key < $1.key }) where at <= now {
                relinkAt[adapter] = nil
                lastRelink[adapter] = now
                await linkSettled(on: adapter)
            }
            for (adapter, at) in rotationRestartAt.sorted(by: { $0.key < $1.key }) where at <= now {
                rotationRestartAt[adapter] = nil
                await restartRotation(on: adapter)
            }
            for key in registrations.keys {
                if registrations.takeCheck(key, dueAt: now) { await confirm(key) }
                guard case .retrying(let at, _)? = registrations[key]?.status.phase, at <= now else { continue }
                await attempt(key)
            }
        }
    }

    // MARK: One at a time

    /// Runs `body` when no other operation is running, then arms the retry timer and announces
    /// what changed. `operation` names it in the journal when it holds its turn, or waits for
    /// it, ``longTurn`` or longer.
    func exclusively<T>(_ operation: String = #function, _ body: () async throws -> T) async throws -> T {
        let asked = clock.now
        let ahead = holder?.operation
        try await turnstile.enter()
        let entered = clock.now
        let waited = asked.duration(to: entered)
        if let ahead, waited >= Self.longTurn {
            logger.notice("\(operation) waited \(waited) for its turn with BlueZ (\(ahead) had it when it asked)")
        }
        holder = (operation, entered)
        defer {
            let held = entered.duration(to: clock.now)
            if held >= Self.longTurn {
                logger.notice("\(operation) held the turn with BlueZ for \(held); \(turnstile.waiting) operation(s) waited behind it")
            }
            holder = nil
            turnstile.leave()
            scheduleRetry()
            announce()
        }
        return try await body()
    }

    /// Keeps one timer armed for the earliest retry or audit.
    func scheduleRetry() {
        let next = [nextRetry, audits.due].compactMap { $0 }.min()
        guard retryAlarm.arm(next) else { return }
        retryTask?.cancel()
        retryTask = next.map { at in
            Task(executorPreference: executor) { [clock, weak self] in
                guard (try? await clock.sleep(until: at, tolerance: nil)) != nil else { return }
                await self?.retryTimerFired(at)
            }
        }
    }

    func retryTimerFired(_ at: C.Instant) async {
        if retryAlarm.fired(at) { retryTask = nil }
        await retryDue()
        await auditDue()
    }

    /// An audit ``auditDelay`` after the last change.
    func scheduleAudit() {
        audits.due = auditDelay.map { clock.now.advanced(by: $0) }
    }

    func announce() {
        let fromAudit = auditing
        auditing = false
        let now = status()
        guard now != announced else { return }
        // The audit compares the advertisements with what BlueZ holds: their changes call for one.
        let advertisementsChanged = now.advertisements != announced.advertisements
        announced = now
        if !fromAudit && advertisementsChanged { scheduleAudit() }
        for listener in listeners.values { listener.yield(now) }
    }

    func removeListener(_ id: Int) {
        listeners[id] = nil
    }
}
