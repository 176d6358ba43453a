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
    /// The status of one advertisement, with instants of this module's clock.
    public typealias Status = AdvertisementStatus<C.Instant>
    /// Where an advertisement is.
    public typealias Phase = Status.Phase

    struct Entry {
        var advertisement: Advertisement
        var status: Status
    }

    private let manager: any PeripheralManaging
    private let clock: C
    private let configuredAdapter: String?
    private let powerOnAllowed: Bool
    private let retry: RetryPolicy
    private let counters: (any EncryptionCounters)?
    private let logger: Logger
    /// How long after the last change the stack is audited; nil for never.
    public nonisolated let auditDelay: Duration?
    /// Where the module's own tasks run; nil for Swift's global executor.
    private nonisolated let executor: (any TaskExecutor)?
    private var entries: [String: Entry] = [:]
    private var adapterInUse: AdapterCapabilities?
    /// BlueZ and the adapters as the events described them.
    private var stack = StackView<C.Instant>()
    private var busy = false
    private var queued: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
    private var nextWaiter = 0
    private var retryTimer: (at: C.Instant, task: Task<Void, Never>)?
    /// When each advertisement updated in place is to be confirmed with BlueZ.
    private var checks: [String: C.Instant] = [:]
    /// When the next audit is due (after the last change), and how many audits in a row
    /// repaired something.
    private var auditAt: C.Instant?
    private var repairingAudits = 0
    /// Whether the changes about to be announced are the audit's own repairs, which schedule
    /// their own recount.
    private var auditing = false
    /// What the last audit found and could not repair, by adapter.
    private var found: [String: String] = [:]
    /// The GATT application to keep registered, with the values in force, and where it is.
    private var application: GATTApplication?
    private var gatt: ApplicationStatus<C.Instant>
    private var listeners: [Int: AsyncStream<[String: Status]>.Continuation] = [:]
    private var announced: [String: Status] = [:]

    /// How long after an in-place update the module asks BlueZ whether it still holds the
    /// advertisement: long enough for bluetoothd to have heard the kernel's answer.
    public static var updateCheckDelay: Duration { .seconds(1) }

    /// How long after the last change the module audits what the stack holds, unless told
    /// otherwise: long enough for a burst of changes to be over.
    public static var standardAuditDelay: Duration { .seconds(1) }

    /// How many audits in a row may repair something before the module stops auditing until
    /// the next change: a difference that comes back after each repair is reported, not fought.
    public static var maximumRepairingAudits: Int { 3 }

    /// How long after an adapter is reported powered off nothing is tried on it: bluetoothd
    /// powers every adapter off as it stops, and vanishes within this time.
    public static var powerOffSettle: Duration { .seconds(1) }

    /// A module over a peripheral manager.
    /// - Parameters:
    ///   - manager: the Bluetooth stack (`BlueZPeripheralManager`, or a mock in tests).
    ///   - clock: the clock retries are scheduled on.
    ///   - adapter: the adapter to use; nil for the first that can advertise.
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
        self.gatt = ApplicationStatus(phase: .off, since: clock.now)
        self.manager = manager
        self.clock = clock
        self.configuredAdapter = adapter
        self.powerOnAllowed = powerOn
        self.retry = retry
        self.counters = counters
        self.logger = logger
    }

    deinit {
        retryTimer?.task.cancel()
        for listener in listeners.values { listener.finish() }
    }

    // MARK: What the user asks

    /// Sets the advertisements by name. New names start off; a changed advertisement that is on
    /// air is updated in place; a name no longer given is taken off air and forgotten.
    public func configure(_ advertisements: [String: Advertisement]) async {
        try? await exclusively {
            for name in entries.keys.sorted() where advertisements[name] == nil {
                await takeOff(name)
                entries[name] = nil
            }
            for (name, advertisement) in advertisements.sorted(by: { $0.key < $1.key }) {
                guard entries[name] != nil else {
                    entries[name] = Entry(advertisement: advertisement, status: Status(desired: false, phase: .off, since: clock.now))
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
            guard entries[name] != nil else { throw PeripheralError.unknownName(name) }
            await replace(name, with: advertisement)
        }
    }

    private func replace(_ name: String, with advertisement: Advertisement) async {
        guard let entry = entries[name], entry.advertisement != advertisement else { return }
        entries[name]!.advertisement = advertisement
        switch entry.status.phase {
        case .on(let id, let adapter):
            do {
                let sent = advertisement.bthomeKey == nil ? advertisement : try sealed(advertisement, for: await capabilities(of: adapter))
                try await manager.updateAdvertisement(id, to: sent)
                checks[name] = clock.now.advanced(by: Self.updateCheckDelay)
            } catch {
                logger.warning("updating \(name) in place failed (\(error)); registering it again")
                await takeOff(name)
                await attempt(name)
            }
        case .failed where entry.status.desired:
            move(name, to: .waiting)
            await attempt(name)
        case .off, .waiting, .retrying, .failed:
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
            guard let entry = entries[name] else { throw PeripheralError.unknownName(name) }
            entries[name]!.status.desired = true
            switch entry.status.phase {
            case .on: return
            case .off, .failed: move(name, to: .waiting)
            case .waiting, .retrying: break
            }
            if let failure = await attempt(name) { throw failure }
        }
    }

    /// Takes an advertisement off air. When it is off already, nothing is called.
    /// - Throws: `PeripheralError`: `unknownName`, or why BlueZ could not unregister it
    ///   (it is still on air then); `CancellationError` as for ``on(_:)``.
    public func off(_ name: String) async throws {
        try await exclusively {
            guard entries[name] != nil else { throw PeripheralError.unknownName(name) }
            entries[name]!.status.desired = false
            let wasOn = entries[name]!.status.phase.id != nil
            try await takeOffThrowing(name)
            if wasOn { await slotFreed() }
        }
    }

    /// The status of every advertisement, by name.
    public func status() -> [String: Status] {
        entries.mapValues(\.status)
    }

    /// Every change of ``status()`` from now on, latest first: a consumer that falls behind
    /// gets the newest state, not every step.
    public func changes() -> AsyncStream<[String: Status]> {
        let (stream, continuation) = AsyncStream<[String: Status]>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = nextWaiter
        nextWaiter += 1
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
        var due = entries.values.compactMap { entry -> C.Instant? in
            if case .retrying(let at, _) = entry.status.phase { at } else { nil }
        } + checks.values
        if case .retrying(let at, _) = gatt.phase { due.append(at) }
        if let settle = stack.nextSettle { due.append(settle) }
        return due.min()
    }

    /// When the next audit is due, if one is (``auditDelay`` after the last change).
    public var nextAudit: C.Instant? {
        auditAt
    }

    /// Retries every advertisement whose retry time has come, confirms with BlueZ those
    /// updated in place whose check is due, and reconciles when an adapter powered off has
    /// settled.
    public func retryDue() async {
        try? await exclusively {
            let now = clock.now
            if !stack.settled(at: now).isEmpty {
                adapterInUse = nil
                await reconcile()
            }
            for name in entries.keys.sorted() {
                if let at = checks[name], at <= now {
                    checks[name] = nil
                    await confirm(name)
                }
                guard case .retrying(let at, _)? = entries[name]?.status.phase, at <= now else { continue }
                await attempt(name)
            }
            if case .retrying(let at, _) = gatt.phase, at <= now { await registerApplication() }
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
            let onAir = entries.keys.sorted().compactMap { name -> (name: String, id: AdvertisementID)? in
                guard case .on(let id, audit.adapter)? = entries[name]?.status.phase else { return nil }
                return (name, id)
            }
            if audit.straysRemoved > 0 {
                logger.warning("audit: \(audit.adapter): unregistered \(audit.straysRemoved) registration(s) of bleadvd's that nothing tracked")
                repaired = true
            }
            for (name, id) in onAir where !audit.held.contains(id) {
                logger.warning("audit: \(name) was on air on \(audit.adapter) as far as bleadvd knew, but is not registered; registering it again")
                move(name, to: .waiting)
                await attempt(name)
                repaired = true
            }
            for id in audit.held.subtracting(onAir.map(\.id)).sorted(by: { $0.rawValue < $1.rawValue }) {
                logger.warning("audit: \(id) is registered on \(audit.adapter) but no advertisement tracks it; unregistering it")
                try? await manager.stopAdvertising(id)
                repaired = true
            }
            if audit.registered < audit.held.count {
                logger.warning("audit: BlueZ counts \(audit.registered) advertisement(s) on \(audit.adapter) for bleadvd's \(audit.held.count); confirming each")
                for (name, id) in onAir where audit.held.contains(id) { await confirm(name) }
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
        for name in entries.keys {
            guard case .on(_, let adapter)? = entries[name]?.status.phase else {
                entries[name]?.status.mismatch = nil
                continue
            }
            entries[name]?.status.mismatch = found[adapter]
        }
    }

    /// Registers `name` again if BlueZ dropped it after an in-place update without saying so.
    private func confirm(_ name: String) async {
        guard case .on(let id, _)? = entries[name]?.status.phase else { return }
        do {
            if try await manager.reregisterIfDropped(id) {
                logger.warning("\(name): BlueZ had dropped it after an in-place update without a word (as BlueZ 5.66 to 5.73 do when the kernel refuses the update); registered it again")
            }
        } catch {
            logger.warning("\(name): BlueZ no longer holds it and registering it again failed (\(error)); trying anew")
            await takeOff(name)
            await attempt(name)
        }
    }

    // MARK: Events

    /// Reconciles after something happened below.
    public func handle(_ event: PeripheralEvent) async {
        try? await exclusively {
            if case .gatt = event { logger.debug("event: \(event)") } else {
                logger.info("event: \(event)")
                scheduleAudit()
            }
            switch event {
            case .bluezVanished(let generation):
                adapterInUse = nil
                let wasCurrent = stack.vanished(generation)
                for name in entries.keys { lostRegistration(name, of: generation, onAdapter: nil, waitAll: wasCurrent) }
                lostApplication(of: generation, onAdapter: nil, waitAll: wasCurrent)
            case .bluezAppeared(let generation):
                stack.appeared(generation)
                adapterInUse = nil
                await reconcile()
            case .adapterAdded(let adapter, _):
                guard configuredAdapter == nil || configuredAdapter == adapter else { return }
                adapterInUse = nil
                await moveToEarlier(adapter)
                await reconcile()
            case .adapterRemoved(let adapter, let generation):
                if adapterInUse?.name == adapter { adapterInUse = nil }
                // They wait for it, even when another adapter remains: bluetoothd removes every
                // adapter when it stops, and registering on another then races its shutdown
                // (the controller can be left with instances nobody holds; seen in the test bed).
                for name in entries.keys { lostRegistration(name, of: generation, onAdapter: adapter, waitAll: false) }
                lostApplication(of: generation, onAdapter: adapter, waitAll: false)
            case .adapterPowered(let adapter, true, _):
                stack.powered(adapter, true, settleUntil: clock.now)
                guard configuredAdapter == nil || configuredAdapter == adapter else { return }
                adapterInUse = nil
                await reconcile()
            case .adapterPowered(let adapter, false, let generation):
                adapterInUse = nil
                stack.powered(adapter, false, settleUntil: clock.now.advanced(by: Self.powerOffSettle))
                for name in entries.keys.sorted() {
                    if case .on(let id, adapter)? = entries[name]?.status.phase, id.generation == generation { await takeOff(name) }
                }
                // They wait, saying why; once the adapter settled (retryDue), it is powered on
                // again (power_on = true) and they are registered again, or the status says why not.
                await reconcile()
            case .gatt(let event):
                // A central's write was checked and taken below: it is the value in force now,
                // and the one registered again after bluetoothd restarts.
                if case .written(let value) = event.kind, application?[event.characteristic] != nil {
                    application![event.characteristic]!.value = value
                }
            case .released(let id):
                guard let name = entries.first(where: { $0.value.status.phase.id == id })?.key else { return }
                if entries[name]!.advertisement.timeout != nil {
                    logger.info("\(name): its timeout ran out; it is off now")
                    entries[name]!.status.desired = false
                    move(name, to: .off)
                    await slotFreed()
                } else {
                    logger.notice("\(name): BlueZ released it; registering it again")
                    move(name, to: .waiting)
                    await attempt(name)
                }
            }
        }
    }

    // MARK: Doing it

    /// One of our advertisements left its slot: those waiting for a free slot are tried now, in
    /// name order, rather than at their next retry (which still comes, for a slot that another
    /// program frees).
    private func slotFreed() async {
        for name in entries.keys.sorted() {
            guard case .retrying? = entries[name]?.status.phase,
                  entries[name]?.status.lastError?.code == .noFreeInstance else { continue }
            await attempt(name)
        }
    }

    /// With no adapter configured, advertisements belong on the first adapter that can
    /// advertise, by name. When `adapter` comes and sorts before the one they are on (after
    /// bluetoothd restarts, whichever adapter's advertising manager comes first is taken), they
    /// move to it, so where they end up does not depend on that race.
    private func moveToEarlier(_ adapter: String) async {
        guard configuredAdapter == nil else { return }
        for name in entries.keys.sorted() {
            guard case .on(_, let on)? = entries[name]?.status.phase, adapter < on else { continue }
            logger.notice("\(name): moving from \(on) to \(adapter), the first adapter that can advertise")
            await takeOff(name)
        }
        if case .registered(_, let on) = gatt.phase, adapter < on {
            logger.notice("GATT: moving the services from \(on) to \(adapter), the first adapter")
            await unregisterApplication()
            moveApplication(to: .waiting)
        }
    }

    private func reconcile() async {
        for name in entries.keys.sorted() {
            guard let status = entries[name]?.status, status.desired else { continue }
            switch status.phase {
            case .waiting, .retrying: await attempt(name)
            case .off, .on, .failed: break
            }
        }
        switch gatt.phase {
        case .waiting, .retrying: await registerApplication()
        case .off, .registered, .failed: break
        }
    }

    /// Tries to register `name` once and records what happened: on air, or why not (a retry
    /// scheduled for a transient failure). Returns the failure, if any.
    @discardableResult
    private func attempt(_ name: String) async -> PeripheralError? {
        guard let advertisement = entries[name]?.advertisement else { return nil }
        do {
            let adapter = try await resolveAdapter()
            try advertisement.validate(for: adapter)
            let id = try await manager.startAdvertising(sealed(advertisement, for: adapter), on: adapter.name)
            entries[name]?.status.lastError = nil
            entries[name]?.status.ignored = advertisement.fieldsIgnored(on: adapter)
            move(name, to: .on(id, adapter: adapter.name))
            logger.info("\(name): on air on \(adapter.name) as \(id)")
            if let ignored = entries[name]?.status.ignored, !ignored.isEmpty {
                logger.warning("\(name): bluetoothd ignores \(ignored.joined(separator: ", ")): BlueZ before 5.77 acts on them only when bluetoothd runs with --experimental (-E)")
            }
            return nil
        } catch {
            let failure = Self.peripheralError(error)
            recordFailure(name, failure, notNow: error is NotNow)
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

    /// What comes after a failed registration, for an advertisement and the GATT application
    /// alike: waiting for BlueZ or an adapter (an event brings it back), a retry with backoff
    /// for a transient failure (the `failures`-th in a row), or nothing until it is changed.
    private enum Recovery {
        case waiting
        case retrying(at: C.Instant, failures: Int, delay: Duration)
        case failed
    }

    private func recovery(from error: PeripheralError, failuresBefore: Int, notNow: Bool) -> Recovery {
        switch error.code {
        case _ where notNow:
            return .waiting
        case .noAdapter, .bluezUnavailable:
            adapterInUse = nil
            return .waiting
        case _ where error.isTransient:
            let failures = failuresBefore + 1
            let delay = retry.delay(afterFailures: failures)
            return .retrying(at: clock.now.advanced(by: delay), failures: failures, delay: delay)
        default:
            return .failed
        }
    }

    private func recordFailure(_ name: String, _ error: PeripheralError, notNow: Bool) {
        guard let status = entries[name]?.status else { return }
        entries[name]!.status.lastError = error
        switch recovery(from: error, failuresBefore: status.phase.failures ?? 0, notNow: notNow) {
        case .waiting:
            move(name, to: .waiting)
            logger.notice("\(name): waiting: \(error.message)")
        case .retrying(let at, let failures, let delay):
            move(name, to: .retrying(at: at, failures: failures))
            logger.warning("\(name): \(error.message); retrying in \(delay)")
        case .failed:
            move(name, to: .failed(error))
            logger.error("\(name): \(error.message); not retrying until it is turned on again")
        }
    }

    /// `advertisement` as it goes to BlueZ on `adapter`: an encrypted BTHome sealed for the
    /// adapter's address with the next counter for its key.
    private func sealed(_ advertisement: Advertisement, for adapter: AdapterCapabilities) throws(PeripheralError) -> Advertisement {
        guard let key = advertisement.bthomeKey else { return advertisement }
        guard let address = adapter.address.flatMap(BTHome.addressBytes) else {
            throw PeripheralError(.failed, "BlueZ did not report \(adapter.name)'s address, which encrypted BTHome needs")
        }
        guard let counters else { throw PeripheralError(.invalidAdvertisement, "encrypted BTHome needs a counter store") }
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
        if let refusal = stack.refusal(on: adapterInUse?.name ?? configuredAdapter) { throw NotNow(reason: refusal) }
        if let adapterInUse { return adapterInUse }
        let adapters = try await manager.adapters()
        let chosen = configuredAdapter.flatMap { name in adapters.first { $0.name == name } }
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
            try await manager.powerOn(adapter: adapter.name)
        }
        adapterInUse = adapter
        return adapter
    }

    /// Unregisters `name` if it is on air; then it is off, or waiting when it should be on.
    private func takeOffThrowing(_ name: String) async throws {
        guard let status = entries[name]?.status else { return }
        if case .on(let id, _) = status.phase {
            do {
                try await manager.stopAdvertising(id)
            } catch let error as PeripheralError where error.code == .notRegistered {
                // Gone already: the goal is reached.
            }
            logger.info("\(name): off air")
        }
        move(name, to: status.desired ? .waiting : .off)
    }

    private func takeOff(_ name: String) async {
        do {
            try await takeOffThrowing(name)
        } catch {
            logger.warning("\(name): unregistering failed: \(error)")
            move(name, to: entries[name]?.status.desired == true ? .waiting : .off)
        }
    }

    /// The run `generation` of bluetoothd, or its adapter (any adapter when nil), dropped what it
    /// held: `name` is not on air if that run held it. A registration a later run answered
    /// stays. What should be on waits for BlueZ or the adapter to come back, not for a timer,
    /// and so does a retry when `waitAll` (the run there vanished).
    private func lostRegistration(_ name: String, of generation: StackGeneration, onAdapter adapter: String?, waitAll: Bool) {
        guard let status = entries[name]?.status else { return }
        switch status.phase {
        case .on(let id, let on) where id.generation == generation && (adapter == nil || adapter == on):
            move(name, to: status.desired ? .waiting : .off)
        case .retrying where waitAll:
            move(name, to: .waiting)
        default:
            break
        }
    }

    private func move(_ name: String, to phase: Phase) {
        guard entries[name] != nil, entries[name]!.status.phase != phase else { return }
        if phase.id == nil {
            checks[name] = nil
            entries[name]!.status.mismatch = nil
        }
        entries[name]!.status.phase = phase
        entries[name]!.status.since = clock.now
    }

    // MARK: GATT

    /// Sets the GATT application to keep registered; nil for none. One of the same shape as
    /// the one registered (`GATTApplication.shape`) changes its values in place, notifying
    /// subscribed centrals; any other change registers it anew.
    public func serve(_ new: GATTApplication?) async {
        try? await exclusively {
            let old = application
            application = new
            if case .registered(let id, _) = gatt.phase {
                if let new, let old, new.shape == old.shape {
                    for (characteristic, value) in new.characteristics where old[characteristic]?.value != value.value {
                        await send(value.value, of: characteristic, in: id)
                    }
                    return
                }
                await unregisterApplication()
            }
            gatt = ApplicationStatus(phase: new == nil ? .off : .waiting, since: clock.now)
            if new != nil { await registerApplication() }
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
            application![characteristic]!.value = value
            if case .registered(let id, _) = gatt.phase { await send(value, of: characteristic, in: id) }
        }
    }

    /// The application in force (with the values set and written since), and where it is.
    public func applicationStatus() -> (application: GATTApplication?, status: ApplicationStatus<C.Instant>) {
        (application, gatt)
    }

    private func send(_ value: [UInt8], of characteristic: GATTCharacteristicID, in id: ApplicationID) async {
        do {
            try await manager.updateValue(value, of: characteristic, in: id)
        } catch {
            logger.warning("GATT: \(characteristic) could not be changed in place: \(error)")
        }
    }

    /// Registers the application once and records what happened, as ``attempt(_:)`` does for
    /// an advertisement.
    private func registerApplication() async {
        guard let application else { return }
        do {
            let adapter = try await resolveAdapter()
            let id = try await manager.registerApplication(application, on: adapter.name)
            gatt = ApplicationStatus(phase: .registered(id, adapter: adapter.name), since: clock.now)
            logger.info("GATT: \(application.services.count) service(s) registered on \(adapter.name) as \(id)")
        } catch {
            let failure = Self.peripheralError(error)
            gatt.lastError = failure
            switch recovery(from: failure, failuresBefore: gatt.phase.failures ?? 0, notNow: error is NotNow) {
            case .waiting:
                moveApplication(to: .waiting)
                logger.notice("GATT: waiting: \(failure.message)")
            case .retrying(let at, let failures, let delay):
                moveApplication(to: .retrying(at: at, failures: failures))
                logger.warning("GATT: \(failure.message); retrying in \(delay)")
            case .failed:
                moveApplication(to: .failed(failure))
                logger.error("GATT: \(failure.message); not retrying until the config changes")
            }
        }
    }

    private func unregisterApplication() async {
        guard case .registered(let id, _) = gatt.phase else { return }
        do {
            try await manager.unregisterApplication(id)
        } catch {
            logger.warning("GATT: unregistering \(id) failed: \(error)")
        }
        moveApplication(to: .off)
    }

    private func moveApplication(to phase: ApplicationStatus<C.Instant>.Phase) {
        guard gatt.phase != phase else { return }
        gatt.phase = phase
        gatt.since = clock.now
    }

    /// The run `generation` of bluetoothd, or its adapter (any adapter when nil), dropped what it
    /// held: the application waits for them to come back if that run held it (as
    /// ``lostRegistration(_:of:onAdapter:waitAll:)`` for an advertisement).
    private func lostApplication(of generation: StackGeneration, onAdapter adapter: String?, waitAll: Bool) {
        switch gatt.phase {
        case .registered(let id, let on) where id.generation == generation && (adapter == nil || adapter == on):
            moveApplication(to: .waiting)
        case .retrying where waitAll: moveApplication(to: .waiting)
        default: break
        }
    }

    // MARK: One at a time

    /// Runs `body` when no other operation is running, then arms the retry timer and announces
    /// what changed.
    private func exclusively<T>(_ body: () async throws -> T) async throws -> T {
        if busy {
            let id = nextWaiter
            nextWaiter += 1
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    queued.append((id, continuation))
                }
            } onCancel: {
                Task(executorPreference: self.executor) { await self.leaveQueue(id) }
            }
        }
        busy = true
        defer {
            if queued.isEmpty { busy = false } else { queued.removeFirst().continuation.resume() }
            scheduleRetry()
            announce()
        }
        return try await body()
    }

    /// A cancelled waiter that has not had its turn yet leaves the queue.
    private func leaveQueue(_ id: Int) {
        guard let index = queued.firstIndex(where: { $0.id == id }) else { return }
        queued.remove(at: index).continuation.resume(throwing: CancellationError())
    }

    /// Keeps one timer armed for the earliest retry or audit.
    private func scheduleRetry() {
        let next = [nextRetry, auditAt].compactMap { $0 }.min()
        guard next != retryTimer?.at else { return }
        retryTimer?.task.cancel()
        retryTimer = next.map { at in
            (at, Task(executorPreference: executor) { [clock, weak self] in
                guard (try? await clock.sleep(until: at, tolerance: nil)) != nil else { return }
                await self?.retryTimerFired(at)
            })
        }
    }

    private func retryTimerFired(_ at: C.Instant) async {
        if retryTimer?.at == at { retryTimer = nil }
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

extension ApplicationStatus.Phase {
    /// How many attempts failed in a row, when retrying.
    var failures: Int? {
        if case .retrying(_, let failures) = self { failures } else { nil }
    }
}

extension AdvertisementStatus.Phase {
    /// The registration's identity when on air.
    var id: AdvertisementID? {
        if case .on(let id, _) = self { id } else { nil }
    }

    /// How many attempts failed in a row, when retrying.
    var failures: Int? {
        if case .retrying(_, let failures) = self { failures } else { nil }
    }
}
