public import AdvertiserConfig
public import AdvertiserControl
import BluetoothModule
public import DBus
public import Logging
public import Peripheral

/// bleadvd's work, apart from process concerns (arguments, signals, exit): owns the control
/// API's name, runs the ``BluetoothModule`` over a ``PeripheralManaging``, feeds it BlueZ's
/// events, fires its retries on the clock, reloads the config, tells systemd how things are.
public actor Daemon<C: Clock>: AdvertiserControlling where C.Duration == Duration {
    /// How long start-up waits for the enabled advertisements before reporting READY anyway.
    public static var readyWait: Duration { .seconds(15) }
    /// How long shutdown waits for BlueZ to unregister: a hung bluetoothd must not keep
    /// bleadvd from exiting within systemd's patience (and the 2 s it promises).
    public static var stopWait: Duration { .milliseconds(1500) }

    let configPath: String
    let module: BluetoothModule<C>
    let manager: any PeripheralManaging
    let connection: DBusConnection
    let clock: C
    let notifier: SystemdNotifier
    let logger: Logger
    var config: DaemonConfig
    /// The states as last announced (StateChanged, STATUS=).
    var published: [String: AdvertisementState] = [:]
    var retryTask: Task<Void, Never>?
    var eventTask: Task<Void, Never>?

    /// A daemon for `config` (read from `configPath`, which `reload` reads again).
    /// - Parameter adapter: overrides the config's adapter (bleadvd's `--adapter`).
    public init(
        config: DaemonConfig, configPath: String, adapter: String? = nil, manager: any PeripheralManaging,
        connection: DBusConnection, clock: C, notifier: SystemdNotifier = SystemdNotifier(environment: [:]),
        logger: Logger
    ) {
        self.config = config
        self.configPath = configPath
        self.manager = manager
        self.connection = connection
        self.clock = clock
        self.notifier = notifier
        self.logger = logger
        self.module = BluetoothModule(
            manager: manager, clock: clock, adapter: adapter ?? config.adapter, powerOn: config.powerOn, logger: logger)
    }

    /// Takes the bus name, serves the control API, watches BlueZ, and puts the enabled
    /// advertisements on air; READY=1 when they are (or after ``readyWait``).
    /// - Throws: ``DBusError`` when the name is taken or the policy forbids owning it.
    public func start() async throws {
        try await connection.requestName(ControlAPI.busName)
        try await ControlService.export(self, on: connection)
        let events = await manager.events()
        eventTask = Task { [weak self] in
            for await event in events { await self?.handle(event) }
        }
        await module.configure(config.advertisements.mapValues(\.advertisement))
        let enabled = config.names.filter { config.advertisements[$0]!.enabled }
        logger.notice("bleadvd starting: \(config.names.count) advertisement(s) in \(configPath), \(enabled.count) enabled")
        // The registrations go on past the wait if BlueZ is slow; only the waiting stops.
        let registering = Task { [module] in
            for name in enabled { try? await module.on(name) }
        }
        let settled = await within(Self.readyWait) { await registering.value }
        await changed()
        let summary = statusLine()
        notifier.notify("READY=1\nSTATUS=" + (settled ? summary : "still trying after \(Self.readyWait): " + summary))
        logger.notice("ready: \(summary)")
    }

    /// Says STOPPING=1 and takes everything off air (unregisters from BlueZ), giving up after
    /// ``stopWait``.
    public func shutdown() async {
        notifier.notify("STOPPING=1")
        eventTask?.cancel()
        retryTask?.cancel()
        let names = config.names
        let done = await within(Self.stopWait) { [module] in
            for name in names { try? await module.off(name) }
        }
        logger.notice(done ? "stopped: everything unregistered" : "stopped: BlueZ did not answer within \(Self.stopWait)")
    }

    // MARK: AdvertiserControlling

    public func on(_ names: [String]) async throws(PeripheralError) {
        try await each(names) { [module] name throws(PeripheralError) in try await Self.typed { try await module.on(name) } }
    }

    public func off(_ names: [String]) async throws(PeripheralError) {
        try await each(names) { [module] name throws(PeripheralError) in try await Self.typed { try await module.off(name) } }
    }

    public func status() async -> [String: AdvertisementState] {
        let now = clock.now
        return await module.status().mapValues { status in
            var state = AdvertisementState(
                desired: status.desired, state: .off, sinceSeconds: Self.seconds(status.since.duration(to: now)),
                error: status.lastError?.message, errorCode: status.lastError?.code.rawValue)
            switch status.actual {
            case .on(let id):
                state.state = .on
                state.id = id.rawValue
            case .off: state.state = .off
            case .waiting: state.state = .waiting
            case .failed: state.state = .failed
            case .retrying(let at):
                state.state = .retrying
                state.retryInSeconds = max(0, Self.seconds(now.duration(to: at)))
            }
            return state
        }
    }

    public func list() async -> [String] {
        config.names
    }

    public func reload() async throws(ReloadError) {
        notifier.reloading()
        defer { notifier.notify("READY=1\nSTATUS=" + statusLine()) }
        let new: DaemonConfig
        do {
            new = try ConfigParser.load(path: configPath)
        } catch {
            logger.error("reload refused, nothing changed: \(error)")
            throw ReloadError(error.description)
        }
        if new.adapter != config.adapter || new.powerOn != config.powerOn {
            logger.warning("adapter and power_on changes take effect when bleadvd restarts")
        }
        let added = new.names.filter { config.advertisements[$0] == nil && new.advertisements[$0]!.enabled }
        config = new
        await module.configure(new.advertisements.mapValues(\.advertisement))
        for name in added { try? await module.on(name) }
        await changed()
        logger.notice("reloaded \(configPath): \(new.names.count) advertisement(s)")
    }

    // MARK: Keeping things going

    func handle(_ event: PeripheralEvent) async {
        await module.handle(event)
        await changed()
    }

    /// After anything happened: announce state changes, update STATUS, schedule the next retry.
    func changed() async {
        let states = await status()
        for (name, state) in states.sorted(by: { $0.key < $1.key }) where published[name]?.state != state.state {
            await ControlService.stateChanged(name, state.state, on: connection)
        }
        let before = statusLine()
        published = states
        if statusLine() != before { notifier.notify("STATUS=" + statusLine()) }
        retryTask?.cancel()
        retryTask = nil
        guard let next = await module.nextRetry else { return }
        retryTask = Task { [clock, weak self] in
            guard (try? await clock.sleep(until: next, tolerance: nil)) != nil else { return }
            await self?.retryDue()
        }
    }

    private func retryDue() async {
        await module.retryDue()
        await changed()
    }

    /// One line for `systemctl status`: how many are on air, and why the others are not.
    func statusLine() -> String {
        let wanted = published.filter(\.value.desired)
        let onAir = wanted.filter { $0.value.state == .on }.count
        var line = "\(onAir) of \(wanted.count) enabled advertisement(s) on air"
        let troubled = wanted.filter { $0.value.state != .on }.sorted { $0.key < $1.key }
        if !troubled.isEmpty {
            line += "; " + troubled.map { "\($0.key): \($0.value.state.rawValue)" + ($0.value.error.map { " (\($0))" } ?? "") }
                .joined(separator: ", ")
        }
        return line
    }

    private func each(_ names: [String], _ body: (String) async throws(PeripheralError) -> Void) async throws(PeripheralError) {
        let targets = names.isEmpty ? config.names : names
        var failures: [(String, PeripheralError)] = []
        for name in targets {
            do {
                try await body(name)
            } catch {
                failures.append((name, error))
            }
        }
        await changed()
        guard let first = failures.first else { return }
        throw PeripheralError(first.1.code, failures.map { "\($0.0): \($0.1.message)" }.joined(separator: "; "))
    }

    /// Runs `body` for at most `limit` on the daemon's clock; whether it finished.
    private func within(_ limit: Duration, _ body: @escaping @Sendable () async -> Void) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await body()
                return true
            }
            group.addTask { [clock] in
                try? await clock.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// The module throws ``PeripheralError`` only; this says so to the type system.
    private static func typed(_ body: () async throws -> Void) async throws(PeripheralError) {
        do {
            try await body()
        } catch let error as PeripheralError {
            throw error
        } catch {
            throw PeripheralError(.unknown, "\(error)")
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
