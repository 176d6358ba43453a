public import Logging
public import Peripheral

/// The domain: for each named advertisement, what should be on air and what is, kept in step
/// through any `PeripheralManaging`.
///
/// - `on`/`off` are idempotent: on twice is one registration, off when off is no call.
/// - Events reconcile: BlueZ gone means nothing is on air; BlueZ or an adapter back means
///   everything that should be on is registered again; `Release` re-registers unless the
///   advertisement's own `timeout` ran out.
/// - Transient failures are retried with backoff on the injected clock: the module records
///   when (``nextRetry``), and whoever drives it calls ``retryDue()`` then (the daemon's loop,
///   or a test after advancing a manual clock). Permanent failures wait for a new `on`.
///
/// Operations run one at a time, so an event never interleaves with a registration.
public actor BluetoothModule<C: Clock> where C.Duration == Duration {
    /// The status of one advertisement, with instants of this module's clock.
    public typealias Status = AdvertisementStatus<C.Instant>

    struct Entry {
        var advertisement: Advertisement
        var desired = false
        var registration: AdvertisementID?
        var adapter: String?
        var failures = 0
        var retryAt: C.Instant?
        var failedForGood = false
        var lastError: PeripheralError?
        var since: C.Instant
    }

    private let manager: any PeripheralManaging
    private let clock: C
    private let configuredAdapter: String?
    private let powerOnAllowed: Bool
    private let retry: RetryPolicy
    private let logger: Logger
    private var entries: [String: Entry] = [:]
    private var adapterInUse: String?
    private var busy = false
    private var queued: [CheckedContinuation<Void, Never>] = []

    /// A module over a peripheral manager.
    /// - Parameters:
    ///   - adapter: the adapter to use; nil for the first that can advertise.
    ///   - powerOn: whether to power the adapter on when it is off.
    public init(
        manager: any PeripheralManaging, clock: C, adapter: String? = nil, powerOn: Bool = true,
        retry: RetryPolicy = .standard, logger: Logger = Logger(label: "bleadvd.module")
    ) {
        self.manager = manager
        self.clock = clock
        self.configuredAdapter = adapter
        self.powerOnAllowed = powerOn
        self.retry = retry
        self.logger = logger
    }

    // MARK: What the user asks

    /// Sets the advertisements by name. New names start off; a changed advertisement that is on
    /// air is updated in place; a name no longer given is taken off air and forgotten.
    public func configure(_ advertisements: [String: Advertisement]) async {
        await exclusively {
            for name in entries.keys.sorted() where advertisements[name] == nil {
                await takeOff(name)
                entries[name] = nil
            }
            for (name, advertisement) in advertisements.sorted(by: { $0.key < $1.key }) {
                guard var entry = entries[name] else {
                    entries[name] = Entry(advertisement: advertisement, since: clock.now)
                    continue
                }
                guard entry.advertisement != advertisement else { continue }
                entry.advertisement = advertisement
                entry.failedForGood = false
                entries[name] = entry
                if let id = entry.registration {
                    do {
                        try await manager.updateAdvertisement(id, to: advertisement)
                    } catch {
                        logger.warning("updating \(name) in place failed (\(error)); registering it again")
                        await takeOff(name)
                        entries[name]?.desired = true
                        _ = try? await register(name)
                    }
                }
            }
        }
    }

    /// Puts an advertisement on air and returns once BlueZ registered it. When it is on air
    /// already, nothing is called.
    /// - Throws: ``PeripheralError``: `unknownName`, or why it could not be registered (for a
    ///   transient reason the module keeps trying; see ``status()``).
    public func on(_ name: String) async throws {
        try await exclusively {
            guard entries[name] != nil else { throw Self.unknown(name) }
            entries[name]!.desired = true
            entries[name]!.failedForGood = false
            guard entries[name]!.registration == nil else { return }
            try await register(name)
        }
    }

    /// Takes an advertisement off air. When it is off already, nothing is called.
    /// - Throws: ``PeripheralError``: `unknownName`, or why BlueZ could not unregister it.
    public func off(_ name: String) async throws {
        try await exclusively {
            guard entries[name] != nil else { throw Self.unknown(name) }
            entries[name]!.desired = false
            try await takeOffThrowing(name)
        }
    }

    /// The status of every advertisement, by name.
    public func status() -> [String: Status] {
        entries.mapValues { entry in
            let actual: Status.Actual =
                if let id = entry.registration { .on(id) }
                else if !entry.desired { .off }
                else if entry.failedForGood { .failed }
                else if let at = entry.retryAt { .retrying(at: at) }
                else { .waiting }
            return Status(desired: entry.desired, actual: actual, lastError: entry.lastError, since: entry.since)
        }
    }

    /// The earliest scheduled retry, if any.
    public var nextRetry: C.Instant? {
        entries.values.compactMap(\.retryAt).min()
    }

    /// Retries every advertisement whose retry time has come.
    public func retryDue() async {
        await exclusively {
            let now = clock.now
            for name in entries.keys.sorted() {
                guard let at = entries[name]?.retryAt, at <= now else { continue }
                entries[name]!.retryAt = nil
                _ = try? await register(name)
            }
        }
    }

    // MARK: Events

    /// Reconciles after something happened below.
    public func handle(_ event: PeripheralEvent) async {
        await exclusively {
            logger.info("event: \(event)")
            switch event {
            case .bluezVanished:
                adapterInUse = nil
                for name in entries.keys { lostRegistration(name, where: { _ in true }) }
            case .bluezAppeared:
                adapterInUse = nil
                await reconcile()
            case .adapterAdded(let adapter):
                guard configuredAdapter == nil || configuredAdapter == adapter else { return }
                adapterInUse = nil
                await reconcile()
            case .adapterRemoved(let adapter):
                if adapterInUse == adapter { adapterInUse = nil }
                for name in entries.keys { lostRegistration(name, where: { $0.adapter == adapter }) }
            case .adapterPowered(let adapter, true):
                guard configuredAdapter == nil || configuredAdapter == adapter else { return }
                await reconcile()
            case .adapterPowered(let adapter, false):
                for name in entries.keys where entries[name]?.adapter == adapter && entries[name]?.registration != nil {
                    await takeOff(name)
                }
            case .released(let id):
                guard let name = entries.first(where: { $0.value.registration == id })?.key else { return }
                entries[name]!.registration = nil
                entries[name]!.since = clock.now
                if entries[name]!.advertisement.timeout != nil {
                    logger.info("\(name): its timeout ran out; it is off now")
                    entries[name]!.desired = false
                } else {
                    logger.notice("\(name): BlueZ released it; registering it again")
                    _ = try? await register(name)
                }
            }
        }
    }

    // MARK: Doing it

    private func reconcile() async {
        for name in entries.keys.sorted() {
            guard let entry = entries[name], entry.desired, entry.registration == nil, !entry.failedForGood else { continue }
            entries[name]!.retryAt = nil
            _ = try? await register(name)
        }
    }

    /// Registers `name`; records the outcome and schedules a retry for a transient failure.
    private func register(_ name: String) async throws {
        guard let advertisement = entries[name]?.advertisement else { return }
        do {
            let adapter = try await resolveAdapter()
            let id = try await manager.startAdvertising(advertisement, on: adapter)
            entries[name]?.registration = id
            entries[name]?.adapter = adapter
            entries[name]?.failures = 0
            entries[name]?.retryAt = nil
            entries[name]?.lastError = nil
            entries[name]?.since = clock.now
            logger.info("\(name): on air on \(adapter) as \(id)")
        } catch {
            let failure = error as? PeripheralError ?? PeripheralError(.unknown, "\(error)")
            recordFailure(name, failure)
            throw failure
        }
    }

    private func recordFailure(_ name: String, _ error: PeripheralError) {
        guard var entry = entries[name] else { return }
        entry.lastError = error
        entry.since = clock.now
        switch error.code {
        case .noAdapter, .bluezUnavailable:
            entry.retryAt = nil
            adapterInUse = nil
            logger.notice("\(name): waiting for an adapter: \(error.message)")
        case _ where error.isTransient:
            entry.failures += 1
            let delay = retry.delay(afterFailures: entry.failures)
            entry.retryAt = clock.now.advanced(by: delay)
            logger.warning("\(name): \(error.message); retrying in \(delay)")
        default:
            entry.failedForGood = true
            entry.retryAt = nil
            logger.error("\(name): \(error.message); not retrying until it is turned on again")
        }
        entries[name] = entry
    }

    private func resolveAdapter() async throws -> String {
        if let adapterInUse { return adapterInUse }
        let adapters = try await manager.adapters()
        let chosen = configuredAdapter.flatMap { name in adapters.first { $0.name == name } }
            ?? (configuredAdapter == nil ? adapters.first : nil)
        guard let adapter = chosen else {
            throw PeripheralError(.noAdapter, configuredAdapter.map { "adapter \($0) is not present or cannot advertise" }
                ?? "no adapter that can advertise")
        }
        if !adapter.powered {
            guard powerOnAllowed else {
                throw PeripheralError(.notPowered, "adapter \(adapter.name) is powered off and power_on is false")
            }
            try await manager.powerOn(adapter: adapter.name)
        }
        adapterInUse = adapter.name
        return adapter.name
    }

    private func takeOffThrowing(_ name: String) async throws {
        entries[name]?.retryAt = nil
        entries[name]?.failures = 0
        guard let id = entries[name]?.registration else { return }
        do {
            try await manager.stopAdvertising(id)
        } catch let error as PeripheralError where error.code == .notRegistered {
            // Gone already: the goal is reached.
        }
        entries[name]?.registration = nil
        entries[name]?.since = clock.now
        logger.info("\(name): off air")
    }

    private func takeOff(_ name: String) async {
        do {
            try await takeOffThrowing(name)
        } catch {
            logger.warning("\(name): unregistering failed: \(error)")
            entries[name]?.registration = nil
        }
    }

    /// BlueZ or the adapter dropped the registrations matching `filter`: nothing of them is on air.
    /// What should be on waits for BlueZ or the adapter to come back, not for a timer.
    private func lostRegistration(_ name: String, where filter: (Entry) -> Bool) {
        guard var entry = entries[name], filter(entry) else { return }
        if entry.registration != nil {
            entry.registration = nil
            entry.since = clock.now
        }
        if entry.desired && !entry.failedForGood {
            entry.retryAt = nil
        }
        entries[name] = entry
    }

    private static func unknown(_ name: String) -> PeripheralError {
        PeripheralError(.unknownName, "no advertisement named \"\(name)\"")
    }

    /// Runs `body` when no other operation is running.
    private func exclusively<T>(_ body: () async throws -> T) async rethrows -> T {
        if busy {
            await withCheckedContinuation { queued.append($0) }
        }
        busy = true
        defer {
            if queued.isEmpty { busy = false } else { queued.removeFirst().resume() }
        }
        return try await body()
    }
}
