package import AdvertiserConfig
package import AdvertiserControl
import BluetoothModule
import DBus
package import Logging
package import Peripheral
import Support

/// bleadvd's work, apart from process concerns (arguments, signal handlers, exit): owns the
/// control API's name, runs the ``BluetoothModule`` over a ``PeripheralManaging``, feeds it
/// BlueZ's events, reloads the config, tells systemd how things are. ``run(requests:watchdog:)``
/// is its one loop, and every task the daemon starts is a child of that loop's task group. It
/// serves the control API's `Reload` (``DaemonControl``); the other parts are served by the
/// components (``Advertising``: `on`, `off`, `status`...; Pairing, Improv, the centrals), and
/// what `on` and `off` change reaches the loop as the module's state, which it publishes.
package actor Daemon<C: Clock>: DaemonControl where C.Duration == Duration {
    /// How long start-up waits for the enabled advertisements before reporting READY anyway.
    package static var readyWait: Duration { .seconds(15) }
    /// How long shutdown waits for BlueZ to unregister: a hung bluetoothd must not keep
    /// bleadvd from exiting within systemd's patience (and the 2 s it promises).
    package static var stopWait: Duration { .milliseconds(1500) }
    /// The shortest time between two changes of one advertisement sent to BlueZ: values set
    /// faster than that are coalesced, the newest wins (``Values/updateInterval``).
    package static var updateInterval: Duration { Values<C>.updateInterval }

    /// Where the daemon is in its life.
    enum Lifecycle: Sendable, Hashable {
        /// Registering what is enabled; READY=1 not sent yet.
        case starting
        /// READY=1 sent: STATUS= follows every change of the summary.
        case ready
        /// Shutdown began: reloads are refused from then on.
        case stopping
    }

    /// What the process asks of the loop (from signals).
    package enum Request: Sendable, Hashable {
        /// Re-read the config (SIGHUP).
        case reload
        /// Take everything off air and return (SIGTERM, SIGINT).
        case stop
    }

    /// Reads a config file: how `reload` reads it again.
    package typealias ConfigLoader = @Sendable (String) async throws(ConfigError) -> DaemonConfig

    let configPath: String
    let loadConfig: ConfigLoader
    let module: BluetoothModule<C>
    let manager: any PeripheralManaging
    /// The system bus as the daemon sees it: its name, the control API, signals, callers.
    let bus: any ControlBus
    let clock: C
    let notifier: SystemdNotifier
    let logger: Logger
    /// The adapter and power_on the daemon started with (a reload does not change them).
    let settings: DaemonConfig
    /// The advertisements' and services' values, a component: its senders, the writes' windows.
    let values: Values<C>
    /// Each advertisement's state as last announced (StateChanged, STATUS=), by name.
    var published: [String: AdvertisementState] = [:]
    /// Values' port: the signals that announce values and writes, and the subscribers.
    let announcements: Announcements
    /// The daemon's components (``Composition``), in the order BlueZ's events reach them. Each
    /// takes the events it declares (a ``Router`` loops over them), serves its part of the
    /// control API, if it has one (``ControlTargets``), takes its part of each reload, starts,
    /// stops and adds its share to `status`: the daemon names none of them.
    let components: [any DaemonComponent]
    /// Connects the components that call each other, once, before anything is served.
    let connect: @Sendable () async -> Void
    /// The control API's advertising part, a component: the states the daemon publishes.
    package let advertising: Advertising<C>
    /// What of the config is on air (all but what a component withholds), and the GATT
    /// application assembled from it: the components' showing port.
    let stage: Stage<C>
    /// Where the daemon is in its life.
    var lifecycle = Lifecycle.starting
    /// One reload at a time; the next one waits here.
    let reloads = Turnstile()
    /// The reload waiting for the one under way, which later asks join: at most one waits
    /// (each would hold a parsed tree, and `systemctl reload` would wait behind them all). It
    /// reads the file after every ask it answers came.
    var waitingReload: Shared<Result<Void, ReloadError>>?
    /// What the loop reacts to; anything in the daemon may post to it.
    let events: AsyncStream<Event>
    let post: AsyncStream<Event>.Continuation

    /// Runs on the bus's event loop (in bleadvd, the D-Bus connection's), as BlueZ's manager
    /// and the module do: in bleadvd, the one thread.
    package nonisolated var unownedExecutor: UnownedSerialExecutor { bus.eventLoop.asUnownedSerialExecutor() }

    /// A daemon for `config` (read from `configPath`, which `reload` reads again).
    /// - Parameters:
    ///   - adapter: overrides the config's adapter (bleadvd's `--adapter`).
    ///   - counters: where encrypted BTHome's counters are kept (bleadvd's `--state-directory`).
    ///   - bondRecord: where the bonds that pairing windows make are recorded (the same directory).
    ///   - trusts: whether a local user may see the values of secured characteristics
    ///     (``LocalTrust/isTrusted(uid:)``: root, bleadvd's user, group bleadvd).
    ///   - loadConfig: reads the file at reload; bleadvd's reads it in a child process first, so
    ///     that a file the TOML library crashes on cannot take the daemon down.
    ///   - auditDelay: how long after the last change the module checks what BlueZ holds; nil
    ///     for no self-check (tests of the daemon that drive its clock themselves).
    ///   - joiner: joins the Wi-Fi networks Improv is given; nil for the bus's (`[improv] join`).
    package init(
        config: DaemonConfig, configPath: String, adapter: String? = nil, manager: any PeripheralManaging,
        bus: any ControlBus, clock: C, notifier: SystemdNotifier = SystemdNotifier(environment: [:]),
        counters: (any EncryptionCounters)? = nil,
        bondRecord: BondRecord? = nil,
        trusts: @escaping @Sendable (UInt32) -> Bool = LocalTrust.isTrusted(uid:),
        loadConfig: @escaping ConfigLoader,
        auditDelay: Duration? = BluetoothModule<C>.standardAuditDelay,
        joiner: (any NetworkJoining)? = nil,
        logger: Logger
    ) {
        self.settings = DaemonConfig(adapter: config.adapter, powerOn: config.powerOn)
        (events, post) = AsyncStream<Event>.makeStream()
        self.configPath = configPath
        self.loadConfig = loadConfig
        self.manager = manager
        self.bus = bus
        self.clock = clock
        self.notifier = notifier
        self.announcements = Announcements(bus: bus, trusts: trusts)
        self.logger = logger
        let module = BluetoothModule(
            manager: manager, clock: clock, adapter: adapter ?? config.adapter, powerOn: config.powerOn,
            counters: counters, auditDelay: auditDelay, logger: logger, executor: bus.eventLoop)
        self.module = module
        self.values = Values(
            advertisements: config.advertisements, services: config.services, module: module, clock: clock, logger: logger,
            executor: bus.eventLoop)
        let composition = Composition(Composition.Parts(
            config: config, configPath: configPath, adapter: adapter, manager: manager, bus: bus, clock: clock, logger: logger,
            module: module, values: values, bondRecord: bondRecord, joiner: joiner))
        let advertising = Advertising(
            module: module, values: values, stage: composition.stage, announcements: announcements, clock: clock,
            components: composition.components, executor: bus.eventLoop)
        self.advertising = advertising
        (components, stage, connect) = (composition.components + [advertising], composition.stage, composition.connect)
    }

    /// The component of type `Component`, if the daemon has one.
    func component<Component: DaemonComponent>(_ type: Component.Type) -> Component? {
        components.lazy.compactMap { $0 as? Component }.first
    }

    package func reload() async throws(ReloadError) {
        if let waiting = waitingReload { return try await waiting.value().get() }
        let mine = Shared<Result<Void, ReloadError>>()
        waitingReload = mine
        // One at a time, in the order asked for: a slow reload of an older file must never be
        // applied after a newer one.
        // A reload cancelled in line is one asked while bleadvd stops.
        let entered = (try? await reloads.enter()) != nil
        if waitingReload === mine { waitingReload = nil }
        let result: Result<Void, ReloadError>
        do {
            try await reloadInTurn(entered: entered)
            result = .success(())
        } catch {
            result = .failure(error)
        }
        if entered { reloads.leave() }
        mine.finish(result)
        try result.get()
    }

    /// The reload whose turn came (`entered`; or not, when bleadvd stops).
    private func reloadInTurn(entered: Bool) async throws(ReloadError) {
        guard entered, lifecycle != .stopping else {
            logger.warning("reload refused: bleadvd is stopping")
            throw ReloadError("bleadvd is stopping; nothing was reloaded")
        }
        notifier.reloading()
        defer { notifier.notify("READY=1\nSTATUS=" + statusLine()) }
        let new: DaemonConfig
        do {
            new = try await loadConfig(configPath)
        } catch {
            logger.error("reload refused, nothing changed: \(error)")
            throw ReloadError(error.description)
        }
        if new.adapter != settings.adapter || new.powerOn != settings.powerOn {
            logger.warning("adapter and power_on changes take effect when bleadvd restarts")
        }
        let known = Set(await values.names)
        let added = new.names.filter { !known.contains($0) && new.advertisements[$0]!.enabled }
        published = published.filter { new.advertisements[$0.key] != nil }
        // In phases: the new file's values, then the module's advertisements, then each
        // component's part, then the GATT application served as they left it.
        let advertisements = await values.reload(advertisements: new.advertisements)
        await values.reload(services: new.services)
        await module.configure(advertisements)
        for component in components { await component.reconfigure(from: new) }
        await module.serve(await stage.application())
        for name in added where await stage.isOffered(name) { try? await module.on(name) }
        logger.notice("reloaded \(configPath): \(new.names.count) advertisement(s), \(new.services.count) service(s)")
    }

    // MARK: States

    /// Announces what changed: StateChanged for each advertisement whose state moved, and
    /// STATUS= when the summary did. Called from the loop only.
    func publish(_ statuses: [RegistrationKey: BluetoothModule<C>.Status]) async {
        let states = await advertising.states(statuses.advertisements, values: await values.advertisementValues())
        let names = Set(await values.names)
        let before = statusLine()
        for (name, state) in states.sorted(by: { $0.key < $1.key }) where names.contains(name) {
            let previous = published[name]?.state
            published[name] = state
            if previous != state.state { await bus.emit(ControlAPI.StateChanged(name: name, state: state.state.rawValue)) }
        }
        if lifecycle == .ready, statusLine() != before { notifier.notify("STATUS=" + statusLine()) }
    }

    /// One line for `systemctl status`: how many are on air, and why the others are not.
    func statusLine() -> String {
        let wanted = published.filter(\.value.desired)
        let onAir = wanted.filter { $0.value.state == .on }.count
        let turning = wanted.filter { $0.value.state == .rotating }.count
        var line = "\(onAir) of \(wanted.count) enabled advertisement(s) on air" + (turning > 0 ? ", \(turning) taking turns" : "")
        let troubled = wanted.filter { $0.value.state != .on && $0.value.state != .rotating }.sorted { $0.key < $1.key }
        if !troubled.isEmpty {
            line += "; " + troubled.map { "\($0.key): \($0.value.state.rawValue)" + ($0.value.error.map { " (\($0))" } ?? "") }
                .joined(separator: ", ")
        }
        // What the self-check could not repair, once per adapter.
        for mismatch in Set(wanted.values.compactMap(\.mismatch)).sorted() { line += "; " + mismatch }
        return line
    }

    // MARK: Helpers

}
