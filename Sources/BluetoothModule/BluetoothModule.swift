public import Logging
public import Peripheral

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

    /// What a registration keeps registered: all else about it is the same for every kind.
    enum Subject {
        case advertisement(Advertisement)
        case application(GATTApplication)
        /// The pairing agent, answering with the decider.
        case agent(PairingMethod, any PairingDecider)
    }

    /// One thing the module keeps registered with the stack, and where it is.
    struct Registration {
        var subject: Subject
        var status: Status
    }

    /// Which registration: an advertisement by its name, the GATT application, or the pairing
    /// agent. In order: the advertisements by name, then the application, then the agent.
    enum Key: Hashable, Comparable, CustomStringConvertible {
        case advertisement(String)
        case application
        case agent

        /// How the log names it: the advertisement's name, `GATT`, or `pairing`.
        var description: String {
            switch self {
            case .advertisement(let name): name
            case .application: "GATT"
            case .agent: "pairing"
            }
        }
    }

    private let manager: any PeripheralManaging
    private let clock: C
    private let configuredAdapter: AdapterChoice?
    private let powerOnAllowed: Bool
    private let retry: RetryPolicy
    private let counters: (any EncryptionCounters)?
    private let logger: Logger
    /// How long after the last change the stack is audited; nil for never.
    public nonisolated let auditDelay: Duration?
    /// Where the module's own tasks run; nil for Swift's global executor.
    private nonisolated let executor: (any TaskExecutor)?
    private var registrations: [Key: Registration] = [:]
    private var adapterInUse: AdapterCapabilities?
    /// BlueZ and the adapters as the events described them.
    private var stack = StackView<C.Instant>()
    /// One operation at a time, in the order called.
    private let turnstile = Turnstile()
    private var nextListener = 0
    /// The one timer, for the earliest retry or audit, and the task sleeping until it.
    private var retryAlarm = Alarm<C.Instant>()
    private var retryTask: Task<Void, Never>?
    /// When each advertisement updated in place is to be confirmed with BlueZ.
    private var checks: [Key: C.Instant] = [:]
    /// When the next audit is due (after the last change), and how many audits in a row
    /// repaired something.
    private var auditAt: C.Instant?
    private var repairingAudits = 0
    /// Whether the changes about to be announced are the audit's own repairs, which schedule
    /// their own recount.
    private var auditing = false
    /// What the last audit found and could not repair, by adapter.
    private var found: [String: String] = [:]
    private var listeners: [Int: AsyncStream<[String: Status]>.Continuation] = [:]
    /// Whether the adapter is to take new bonds (a pairing window is open); sent again after
    /// each registration of the agent, which makes BlueZ's adapters pairable.
    private var pairable = false
    private var announced: [String: Status] = [:]
    /// The links up on each adapter, by the other side's address, as the events told them.
    private var links: [String: Set<String>] = [:]
    /// When what the links on each adapter took off air is to be registered again, and when it
    /// last was (``linkSettle``, ``relinkSpacing``).
    private var relinkAt: [String: C.Instant] = [:]
    private var lastRelink: [String: C.Instant] = [:]

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
            for key in registrations.keys.sorted() {
                guard case .advertisement(let name) = key, advertisements[name] == nil else { continue }
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
    /// air (a change BlueZ cannot follow in place, such as a property that appears, registers
    /// it again).
    /// - Throws: `PeripheralError` `unknownName`; `CancellationError` as for ``on(_:)``.
    public func update(_ name: String, to advertisement: Advertisement) async throws {
        try await exclusively {
            guard registrations[.advertisement(name)] != nil else { throw PeripheralError.unknownName(name) }
            await replace(name, with: advertisement)
        }
    }

    private func replace(_ name: String, with advertisement: Advertisement) async {
        let key = Key.advertisement(name)
        guard let registration = registrations[key], case .advertisement(let old) = registration.subject,
              old != advertisement else { return }
        registrations[key]!.subject = .advertisement(advertisement)
        switch registration.status.phase {
        case .on(let id, let adapter):
            do {
                let sent = advertisement.bthomeKey == nil ? advertisement : try sealed(advertisement, for: await capabilities(of: adapter))
                try await manager.updateAdvertisement(id, to: sent)
                checks[key] = clock.now.advanced(by: Self.updateCheckDelay)
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

    /// The status of every advertisement, by name.
    public func status() -> [String: Status] {
        registrations.reduce(into: [:]) { result, entry in
            if case .advertisement(let name) = entry.key { result[name] = entry.value.status }
        }
    }

    /// Every change of ``status()`` from now on, latest first: a consumer that falls behind
    /// gets the newest state, not every step.
    public func changes() -> AsyncStream<[String: Status]> {
        let (stream, continuation) = AsyncStream<[String: Status]>.makeStream(bufferingPolicy: .bufferingNewest(1))
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
        var due = registrations.values.compactMap { registration -> C.Instant? in
            if case .retrying(let at, _) = registration.status.phase { at } else { nil }
        } + checks.values
        if let settle = stack.nextSettle { due.append(settle) }
        return (due + relinkAt.values).min()
    }

    /// When the next audit is due, if one is (``auditDelay`` after the last change).
    public var nextAudit: C.Instant? {
        auditAt
    }

    /// Retries every registration whose retry time has come, confirms with BlueZ those
    /// updated in place whose check is due, and reconciles when an adapter powered off has
    /// settled.
    public func retryDue() async {
        try? await exclusively {
            let now = clock.now
            if !stack.settled(at: now).isEmpty {
                adapterInUse = nil
                await reconcile()
            }
            for (adapter, at) in relinkAt.sorted(by: { $0.key < $1.key }) where at <= now {
                relinkAt[adapter] = nil
                lastRelink[adapter] = now
                await linkSettled(on: adapter)
            }
            for key in registrations.keys.sorted() {
                if let at = checks[key], at <= now {
                    checks[key] = nil
                    await confirm(key)
                }
                guard case .retrying(let at, _)? = registrations[key]?.status.phase, at <= now else { continue }
                await attempt(key)
            }
        }
    }

    /// Runs the audit if its time (``nextAudit``) has come. The module's timer calls it after
    /// ``retryDue()``; a test may call it after advancing a manual clock.
    public func auditDue() async {
        try? await exclusively {
            guard let at = auditAt, at <= clock.now else { return }
            auditAt = nil
            await audit()
        }
    }

    /// What the last audit found and could not repair, by adapter: BlueZ holds more
    /// advertisements there than bleadvd registered (another program's, or a registration of
    /// bleadvd's it cannot name). Empty when all agrees.
    public func discrepancies() -> [String: String] {
        found
    }

    /// Compares what the stack holds with what is on air, adapter by adapter, and repairs what
    /// it can: an advertisement believed on air that the manager no longer holds is registered
    /// again, a registration no advertisement tracks is unregistered, and when the stack counts
    /// fewer than are held each is confirmed (registered again if it was dropped).
    private func audit() async {
        if stack.bluez == .absent { return }
        auditing = true
        let audits: [RegistrationAudit]
        do {
            audits = try await manager.audit()
        } catch {
            logger.debug("audit: could not ask the stack: \(error)")
            return
        }
        var repaired = false
        var unexplained: [String: String] = [:]
        for audit in audits {
            let onAir = registrations.keys.sorted().compactMap { key -> (key: Key, id: RegistrationID)? in
                guard case .advertisement = key, case .on(let id, audit.adapter)? = registrations[key]?.status.phase else { return nil }
                return (key, id)
            }
            if audit.straysRemoved > 0 {
                logger.warning("audit: \(audit.adapter): unregistered \(audit.straysRemoved) registration(s) of bleadvd's that nothing tracked")
                repaired = true
            }
            for (key, id) in onAir where !audit.held.contains(id) {
                logger.warning("audit: \(key) was on air on \(audit.adapter) as far as bleadvd knew, but is not registered; registering it again")
                move(key, to: .waiting)
                await attempt(key)
                repaired = true
            }
            for id in audit.held.subtracting(onAir.map(\.id)).sorted(by: { $0.rawValue < $1.rawValue }) {
                logger.warning("audit: \(id) is registered on \(audit.adapter) but no advertisement tracks it; unregistering it")
                try? await manager.stopAdvertising(id)
                repaired = true
            }
            if audit.registered < audit.held.count {
                logger.warning("audit: BlueZ counts \(audit.registered) advertisement(s) on \(audit.adapter) for bleadvd's \(audit.held.count); confirming each")
                for (key, id) in onAir where audit.held.contains(id) { await confirm(key) }
                repaired = true
            }
            if audit.registered > audit.held.count {
                unexplained[audit.adapter] = "BlueZ holds \(audit.registered) advertisement(s) on \(audit.adapter), bleadvd \(audit.held.count): \(audit.registered - audit.held.count) registered by another program, or by bleadvd where it cannot name them"
            }
        }
        if repaired {
            // Counted again once the repairs settled; a difference that keeps coming back is
            // reported rather than fought.
            repairingAudits += 1
            if repairingAudits < Self.maximumRepairingAudits {
                scheduleAudit()
                return
            }
            logger.error("audit: what BlueZ holds still differs after \(repairingAudits) repairs; not repairing again until something changes")
        }
        repairingAudits = 0
        for (adapter, text) in unexplained.sorted(by: { $0.key < $1.key }) where found[adapter] != text {
            logger.warning("audit: \(text)")
        }
        for adapter in found.keys.sorted() where unexplained[adapter] == nil {
            logger.notice("audit: \(adapter): what BlueZ holds agrees with bleadvd again")
        }
        found = unexplained
        for key in registrations.keys {
            guard case .advertisement = key, case .on(_, let adapter)? = registrations[key]?.status.phase else { continue }
            registrations[key]?.status.mismatch = found[adapter]
        }
    }

    /// Registers `key` again if BlueZ dropped it after an in-place update without saying so.
    private func confirm(_ key: Key) async {
        guard case .on(let id, _)? = registrations[key]?.status.phase else { return }
        do {
            if try await manager.reregisterIfDropped(id) {
                logger.warning("\(key): BlueZ had dropped it after an in-place update without a word (as BlueZ 5.66 to 5.73 do when the kernel refuses the update); registered it again")
            }
        } catch {
            logger.warning("\(key): BlueZ no longer holds it and registering it again failed (\(error)); trying anew")
            await takeOff(key)
            await attempt(key)
        }
    }

    // MARK: Events

    /// Reconciles after something happened below.
    public func handle(_ event: PeripheralEvent) async {
        try? await exclusively {
            switch event {
            // A central in radio range decides how often these come.
            case .gatt, .paired, .connected, .disconnected: logger.debug("event: \(event)")
            default:
                logger.info("event: \(event)")
                scheduleAudit()
            }
            switch event {
            case .bluezVanished(let generation):
                adapterInUse = nil
                linksEnded(on: nil)
                let wasCurrent = stack.vanished(generation)
                for key in registrations.keys { lost(key, of: generation, onAdapter: nil, waitAll: wasCurrent) }
            case .bluezAppeared(let generation):
                stack.appeared(generation)
                adapterInUse = nil
                await reconcile()
            case .adapterAdded(let adapter, _):
                guard configuredAdapter?.mayBe(adapter) ?? true else { return }
                adapterInUse = nil
                await moveToEarlier(adapter)
                await reconcile()
            case .adapterRemoved(let adapter, let generation):
                if adapterInUse?.name == adapter { adapterInUse = nil }
                linksEnded(on: adapter)
                // They wait for it, even when another adapter remains: bluetoothd removes every
                // adapter when it stops, and registering on another then races its shutdown
                // (the controller can be left with instances nobody holds; seen in the test bed).
                for key in registrations.keys { lost(key, of: generation, onAdapter: adapter, waitAll: false) }
            case .adapterPowered(let adapter, true, _):
                stack.powered(adapter, true, settleUntil: clock.now)
                guard configuredAdapter?.mayBe(adapter) ?? true else { return }
                adapterInUse = nil
                await reconcile()
            case .adapterPowered(let adapter, false, let generation):
                adapterInUse = nil
                linksEnded(on: adapter)
                stack.powered(adapter, false, settleUntil: clock.now.advanced(by: Self.powerOffSettle))
                // Advertisements leave the air with the power; BlueZ keeps the GATT application.
                for key in registrations.keys.sorted() {
                    guard case .advertisement = key, case .on(let id, adapter)? = registrations[key]?.status.phase,
                          id.generation == generation else { continue }
                    await takeOff(key)
                }
                // They wait, saying why; once the adapter settled (retryDue), it is powered on
                // again (power_on = true) and they are registered again, or the status says why not.
                await reconcile()
            case .connected(let central, let adapter):
                guard links[adapter, default: []].insert(central).inserted, relinkAt[adapter] == nil else { return }
                let settled = clock.now.advanced(by: Self.linkSettle)
                relinkAt[adapter] = lastRelink[adapter].map { max(settled, $0.advanced(by: Self.relinkSpacing)) } ?? settled
            case .disconnected(let central, let adapter):
                guard links[adapter]?.remove(central) != nil, links[adapter]!.isEmpty else { return }
                links[adapter] = nil
                relinkAt[adapter] = nil
                await lastLinkEnded(on: adapter)
            case .paired:
                break
            case .gatt(let event):
                // A central's write was checked and taken below: it is the value in force now,
                // and the one registered again after bluetoothd restarts.
                if case .written(let bytes, _) = event.kind { changeApplication { $0[event.characteristic]?.value = bytes } }
            case .released(let id):
                guard let key = registrations.first(where: { $0.value.status.phase.id == id })?.key else { return }
                if case .advertisement(let advertisement)? = registrations[key]?.subject, advertisement.timeout != nil {
                    logger.info("\(key): its timeout ran out; it is off now")
                    registrations[key]!.status.desired = false
                    move(key, to: .off)
                    await slotFreed()
                } else {
                    logger.notice("\(key): BlueZ released it; registering it again")
                    move(key, to: .waiting)
                    await attempt(key)
                }
            }
        }
    }

    // MARK: Links

    /// Links on `adapter` have settled (``linkSettle``). On a controller with extended
    /// advertising each link ended the advertising set it came from, and the kernel enables that
    /// set again only when the link ends; so every advertisement on air there is registered
    /// again, which the kernel enables beside the links where the controller's LE states allow.
    /// One the stack refuses is paused until the adapter's last central has left. Without
    /// extended advertising the kernel enables advertising again by itself: nothing to do.
    private func linkSettled(on adapter: String) async {
        let onAir = registrations.keys.sorted().filter { key in
            guard case .advertisement = key, case .on(_, adapter)? = registrations[key]?.status.phase else { return false }
            return true
        }
        guard let centrals = links[adapter], !centrals.isEmpty, !onAir.isEmpty,
              let capabilities = try? await capabilities(of: adapter), !capabilities.secondaryChannels.isEmpty else { return }
        let said = centrals.count == 1 ? ("a link", "it") : ("\(centrals.count) links", "them")
        logger.notice("\(said.0) on \(adapter) took advertising there off air: registering \(onAir.map(\.description).joined(separator: ", ")) again beside \(said.1)")
        for key in onAir {
            await takeOff(key)
            guard let failure = await attempt(key), registrations[key]?.status.phase.failures != nil else { continue }
            move(key, to: .paused(adapter: adapter))
            logger.notice("\(key): paused: a central is connected on \(adapter), and the stack refused it beside the link (\(failure.message)); registering it again when the link ends")
        }
    }

    /// The last link on `adapter` ended: what it paused is registered again.
    private func lastLinkEnded(on adapter: String) async {
        for key in registrations.keys.sorted() {
            guard case .paused(adapter)? = registrations[key]?.status.phase else { continue }
            logger.notice("\(key): the last central on \(adapter) left; registering it again")
            move(key, to: .waiting)
            await attempt(key)
        }
    }

    /// The links on `adapter` (every adapter when nil) ended with it, or with bluetoothd: what
    /// they paused waits for the adapter, as everything else there does.
    private func linksEnded(on adapter: String?) {
        if let adapter { links[adapter] = nil; relinkAt[adapter] = nil } else { links = [:]; relinkAt = [:] }
        for key in registrations.keys {
            guard case .paused(let on)? = registrations[key]?.status.phase, adapter == nil || adapter == on else { continue }
            move(key, to: .waiting)
        }
    }

    // MARK: Doing it

    /// One of our advertisements left its slot: those waiting for a free slot are tried now, in
    /// name order, rather than at their next retry (which still comes, for a slot that another
    /// program frees).
    private func slotFreed() async {
        for key in registrations.keys.sorted() {
            guard case .retrying? = registrations[key]?.status.phase,
                  registrations[key]?.status.lastError?.code == .noFreeInstance else { continue }
            await attempt(key)
        }
    }

    /// With no adapter configured, registrations belong on the first adapter that can
    /// advertise, by name. When `adapter` comes and sorts before the one they are on (after
    /// bluetoothd restarts, whichever adapter's advertising manager comes first is taken), they
    /// move to it, so where they end up does not depend on that race.
    private func moveToEarlier(_ adapter: String) async {
        guard configuredAdapter == nil else { return }
        for key in registrations.keys.sorted() {
            guard case .on(_, let on)? = registrations[key]?.status.phase, adapter < on else { continue }
            logger.notice("\(key): moving from \(on) to \(adapter), the first adapter that can advertise")
            await takeOff(key)
        }
    }

    /// Tries what should be registered and waits for BlueZ or an adapter, or for its retry.
    private func reconcile() async {
        for key in registrations.keys.sorted() {
            guard let status = registrations[key]?.status, status.desired else { continue }
            switch status.phase {
            case .waiting, .retrying: await attempt(key)
            case .off, .on, .failed, .paused: break
            }
        }
    }

    /// Tries to register `key` once and records what happened: registered, or why not (a retry
    /// scheduled for a transient failure). Only the call itself differs by kind. Returns the
    /// failure, if any.
    @discardableResult
    private func attempt(_ key: Key) async -> PeripheralError? {
        guard let subject = registrations[key]?.subject else { return nil }
        do {
            let adapter = try await resolveAdapter()
            let id: RegistrationID
            var ignored: [String] = []
            switch subject {
            case .advertisement(let advertisement):
                try advertisement.validate(for: adapter)
                id = try await manager.startAdvertising(sealed(advertisement, for: adapter), on: adapter.name)
                ignored = advertisement.fieldsIgnored(on: adapter)
                logger.info("\(key): on air on \(adapter.name) as \(id)")
            case .application(let application):
                id = try await manager.registerApplication(application, on: adapter.name)
                logger.info("GATT: \(application.services.count) service(s) registered on \(adapter.name) as \(id)")
            case .agent(let method, let decider):
                id = try await manager.registerAgent(method, decider: decider)
                logger.info("pairing: agent registered for \(method.rawValue) as \(id)")
                await sendPairable(on: adapter.name)
            }
            registrations[key]?.status.lastError = nil
            registrations[key]?.status.ignored = ignored
            registrations[key]?.status.adapterAddress = adapter.address
            move(key, to: .on(id, adapter: adapter.name))
            if !ignored.isEmpty {
                logger.warning("\(key): bluetoothd ignores \(ignored.joined(separator: ", ")): BlueZ before 5.77 acts on them only when bluetoothd runs with --experimental (-E)")
            }
            return nil
        } catch {
            let failure = Self.peripheralError(error)
            recordFailure(key, failure, notNow: error is NotNow)
            return failure
        }
    }

    /// What a registration's failure means: the manager throws `PeripheralError`, or
    /// `CancellationError` when its caller gave up on BlueZ; the stack view refuses with ``NotNow``.
    private static func peripheralError(_ error: any Error) -> PeripheralError {
        (error as? NotNow)?.reason ?? error as? PeripheralError
            ?? (error is CancellationError ? PeripheralError(.timeout, "gave up waiting for BlueZ") : PeripheralError(.unknown, "\(error)"))
    }

    /// The stack view says a registration may not be tried now: it waits for the event (or the
    /// end of an adapter's settling) that changes that.
    private struct NotNow: Error {
        let reason: PeripheralError
    }

    /// Records a failed registration and what comes after it, for every kind alike: waiting
    /// for BlueZ or an adapter (an event brings it back), a retry with backoff for a transient
    /// failure, or nothing until it is changed.
    private func recordFailure(_ key: Key, _ error: PeripheralError, notNow: Bool) {
        guard let status = registrations[key]?.status else { return }
        registrations[key]!.status.lastError = error
        switch error.code {
        case _ where notNow:
            move(key, to: .waiting)
            logger.notice("\(key): waiting: \(error.message)")
        case .noAdapter, .bluezUnavailable:
            adapterInUse = nil
            move(key, to: .waiting)
            logger.notice("\(key): waiting: \(error.message)")
        case _ where error.isTransient:
            let failures = (status.phase.failures ?? 0) + 1
            let delay = retry.delay(afterFailures: failures)
            move(key, to: .retrying(at: clock.now.advanced(by: delay), failures: failures))
            logger.warning("\(key): \(error.message); retrying in \(delay)")
        default:
            move(key, to: .failed(error))
            let until = if case .application = key { "the config changes" } else { "it is turned on again" }
            logger.error("\(key): \(error.message); not retrying until \(until)")
        }
    }

    /// `advertisement` as it goes to BlueZ on `adapter`: an encrypted BTHome sealed for the
    /// adapter's address with the next counter for its key.
    private func sealed(_ advertisement: Advertisement, for adapter: AdapterCapabilities) throws(PeripheralError) -> Advertisement {
        guard let key = advertisement.bthomeKey else { return advertisement }
        guard let address = adapter.address.flatMap(BTHome.addressBytes) else {
            throw PeripheralError(.failed, "BlueZ did not report \(adapter.name)'s address, which encrypted BTHome needs")
        }
        guard let counters else { throw PeripheralError(.invalid, "encrypted BTHome needs a counter store") }
        return advertisement.sealed(address: address, counter: try counters.next(for: key))
    }

    /// What adapter `name` can do: the one in use, or as BlueZ reports it now.
    private func capabilities(of name: String) async throws -> AdapterCapabilities {
        if let adapterInUse, adapterInUse.name == name { return adapterInUse }
        guard let adapter = try await manager.adapters().first(where: { $0.name == name }) else {
            throw PeripheralError(.noAdapter, "adapter \(name) is not present")
        }
        return adapter
    }

    /// The adapter to register on, powered on if it may be; throws ``NotNow`` when the stack
    /// view says nothing may be tried now.
    private func resolveAdapter() async throws -> AdapterCapabilities {
        if let refusal = stack.refusal(on: adapterInUse?.name ?? configuredAdapter?.name) { throw NotNow(reason: refusal) }
        if let adapterInUse { return adapterInUse }
        let adapters = try await manager.adapters()
        let chosen = configuredAdapter.flatMap { choice in adapters.first(where: choice.matches) }
            ?? (configuredAdapter == nil ? adapters.first : nil)
        guard let adapter = chosen else {
            throw PeripheralError(.noAdapter, configuredAdapter.map { "adapter \($0) is not present or cannot advertise" }
                ?? "no adapter that can advertise")
        }
        if let refusal = stack.refusal(on: adapter.name) { throw NotNow(reason: refusal) }
        if !adapter.powered {
            guard powerOnAllowed else {
                throw PeripheralError(.notPowered, "adapter \(adapter.name) is powered off and power_on is false")
            }
            do {
                try await manager.powerOn(adapter: adapter.name)
            } catch let error as PeripheralError where error.code == .notPowered {
                // BlueZ is changing the adapter's power already (bluetoothd powers every adapter
                // on as it starts): its Powered event brings the registrations back, or the end
                // of the settling (the retry's backoff, for an adapter that stays busy), with no
                // warning.
                stack.changingPower(adapter.name, now: clock.now) { retry.delay(afterFailures: $0) }
                throw NotNow(reason: stack.refusal(on: adapter.name) ?? error)
            }
        }
        adapterInUse = adapter
        return adapter
    }

    /// Unregisters `key` if it is registered; then it is off, or waiting when it should be on.
    private func takeOffThrowing(_ key: Key) async throws {
        guard let registration = registrations[key] else { return }
        if case .on(let id, _) = registration.status.phase {
            switch registration.subject {
            case .advertisement:
                do {
                    try await manager.stopAdvertising(id)
                } catch let error as PeripheralError where error.code == .notRegistered {
                    // Gone already: the goal is reached.
                }
                logger.info("\(key): off air")
            case .application:
                try await manager.unregisterApplication(id)
                logger.info("GATT: unregistered \(id)")
            case .agent:
                do {
                    try await manager.unregisterAgent(id)
                } catch let error as PeripheralError where error.code == .notRegistered {
                    // Gone already.
                }
                logger.info("pairing: agent unregistered")
            }
        }
        move(key, to: registration.status.desired ? .waiting : .off)
    }

    private func takeOff(_ key: Key) async {
        do {
            try await takeOffThrowing(key)
        } catch {
            logger.warning("\(key): unregistering failed: \(error)")
            move(key, to: registrations[key]?.status.desired == true ? .waiting : .off)
        }
    }

    /// The run `generation` of bluetoothd, or its adapter (any adapter when nil), dropped what it
    /// held: `key` is not registered if that run held it. A registration a later run answered
    /// stays. What should be registered waits for BlueZ or the adapter to come back, not for a
    /// timer, and so does a retry when `waitAll` (the run there vanished).
    private func lost(_ key: Key, of generation: StackGeneration, onAdapter adapter: String?, waitAll: Bool) {
        guard let status = registrations[key]?.status else { return }
        switch status.phase {
        case .on(let id, let on) where id.generation == generation && (adapter == nil || adapter == on):
            move(key, to: status.desired ? .waiting : .off)
        case .retrying where waitAll:
            move(key, to: .waiting)
        default:
            break
        }
    }

    private func move(_ key: Key, to phase: Phase) {
        guard registrations[key] != nil, registrations[key]!.status.phase != phase else { return }
        if phase.id == nil {
            checks[key] = nil
            registrations[key]!.status.mismatch = nil
        }
        registrations[key]!.status.phase = phase
        registrations[key]!.status.since = clock.now
    }

    // MARK: GATT

    /// The GATT application in force (with the values set and written since).
    private var application: GATTApplication? {
        if case .application(let application)? = registrations[.application]?.subject { application } else { nil }
    }

    /// Changes the application in force, where one is.
    private func changeApplication(_ change: (inout GATTApplication) -> Void) {
        guard var application else { return }
        change(&application)
        registrations[.application]?.subject = .application(application)
    }

    /// Sets the GATT application to keep registered; nil for none. One of the same shape as
    /// the one registered (`GATTApplication.shape`) changes its values in place, notifying
    /// subscribed centrals; any other change registers it anew.
    public func serve(_ new: GATTApplication?) async {
        try? await exclusively {
            let old = application
            if case .on(let id, _)? = registrations[.application]?.status.phase {
                if let new, let old, new.shape == old.shape {
                    registrations[.application]!.subject = .application(new)
                    for (characteristic, value) in new.characteristics where old[characteristic]?.value != value.value {
                        await send(value.value, of: characteristic, in: id)
                    }
                    return
                }
                registrations[.application]!.status.desired = false
                await takeOff(.application)
            }
            registrations[.application] = new.map {
                Registration(subject: .application($0), status: Status(desired: true, phase: .waiting, since: clock.now))
            }
            if new != nil { await attempt(.application) }
        }
    }

    /// Changes one characteristic's value; subscribed centrals are notified of it.
    /// - Throws: `PeripheralError` `unknownName` when no characteristic has that name;
    ///   `CancellationError` as for ``on(_:)``. A value BlueZ could not take is logged, and
    ///   stays the one registered next time.
    public func setValue(_ value: [UInt8], of characteristic: GATTCharacteristicID) async throws {
        try await exclusively {
            guard application?[characteristic] != nil else {
                throw PeripheralError(.unknownName, "no characteristic named \(PeripheralError.quoted(characteristic.description))")
            }
            changeApplication { $0[characteristic]!.value = value }
            if case .on(let id, _)? = registrations[.application]?.status.phase { await send(value, of: characteristic, in: id) }
        }
    }

    /// The application in force (with the values set and written since), and where it is; nil
    /// for both when none is configured.
    public func applicationStatus() -> (application: GATTApplication?, status: Status?) {
        (application, registrations[.application]?.status)
    }

    private func send(_ value: [UInt8], of characteristic: GATTCharacteristicID, in id: RegistrationID) async {
        do {
            try await manager.updateValue(value, of: characteristic, in: id)
        } catch {
            logger.warning("GATT: \(characteristic) could not be changed in place: \(error)")
        }
    }

    // MARK: Pairing

    /// Sets how centrals pair (nil: no agent, so no new bonds). The agent is kept registered as
    /// the application is: again after bluetoothd comes back. A new method registers it anew.
    public func offerPairing(_ method: PairingMethod?, decider: any PairingDecider) async {
        try? await exclusively {
            if case .agent(let old, _)? = registrations[.agent]?.subject, old == method { return }
            if registrations[.agent] != nil {
                registrations[.agent]!.status.desired = false
                await takeOff(.agent)
            }
            registrations[.agent] = method.map {
                Registration(subject: .agent($0, decider), status: Status(desired: true, phase: .waiting, since: clock.now))
            }
            if method != nil { await attempt(.agent) }
        }
    }

    /// Opens (true) or closes the adapter to new bonds; kept through the agent's registrations.
    /// - Throws: `PeripheralError` when BlueZ could not be told (the agent still refuses what
    ///   its decider refuses); `CancellationError` as for ``on(_:)``.
    public func setPairable(_ open: Bool) async throws {
        try await exclusively {
            pairable = open
            guard case .on(_, let adapter)? = registrations[.agent]?.status.phase else { return }
            try await manager.setPairable(open, adapter: adapter)
        }
    }

    /// The agent's registration, nil when pairing is off.
    public func agentStatus() -> Status? {
        registrations[.agent]?.status
    }

    /// The centrals bonded with the adapter in use.
    /// - Throws: `PeripheralError` when there is no adapter or BlueZ cannot be asked.
    public func bonds() async throws -> [Bond] {
        try await exclusively {
            try await manager.bonds(adapter: try await resolveAdapter().name).sorted()
        }
    }

    /// Removes the bond with `central` on the adapter in use.
    /// - Throws: `PeripheralError` `unknownName` when there is none.
    public func forget(_ central: String) async throws {
        try await exclusively {
            try await manager.removeBond(central, adapter: try await resolveAdapter().name)
            logger.notice("pairing: forgot \(central)")
        }
    }

    /// Tells BlueZ whether the adapter takes new bonds, as ``setPairable(_:)`` last said.
    private func sendPairable(on adapter: String) async {
        do {
            try await manager.setPairable(pairable, adapter: adapter)
        } catch {
            logger.error("pairing: could not set \(adapter) \(pairable ? "pairable" : "not pairable") (\(error)); the agent refuses what the window does not allow")
        }
    }

    // MARK: One at a time

    /// Runs `body` when no other operation is running, then arms the retry timer and announces
    /// what changed.
    private func exclusively<T>(_ body: () async throws -> T) async throws -> T {
        try await turnstile.enter()
        defer {
            turnstile.leave()
            scheduleRetry()
            announce()
        }
        return try await body()
    }

    /// Keeps one timer armed for the earliest retry or audit.
    private func scheduleRetry() {
        let next = [nextRetry, auditAt].compactMap { $0 }.min()
        guard retryAlarm.arm(next) else { return }
        retryTask?.cancel()
        retryTask = next.map { at in
            Task(executorPreference: executor) { [clock, weak self] in
                guard (try? await clock.sleep(until: at, tolerance: nil)) != nil else { return }
                await self?.retryTimerFired(at)
            }
        }
    }

    private func retryTimerFired(_ at: C.Instant) async {
        if retryAlarm.fired(at) { retryTask = nil }
        await retryDue()
        await auditDue()
    }

    /// An audit ``auditDelay`` after the last change.
    private func scheduleAudit() {
        auditAt = auditDelay.map { clock.now.advanced(by: $0) }
    }

    private func announce() {
        let fromAudit = auditing
        auditing = false
        let now = status()
        guard now != announced else { return }
        announced = now
        if !fromAudit { scheduleAudit() }
        for listener in listeners.values { listener.yield(now) }
    }

    private func removeListener(_ id: Int) {
        listeners[id] = nil
    }
}
