#if canImport(Glibc)
import Glibc
#endif
import AdvertiserConfig
import AdvertiserControl
import Logging
import Peripheral
import Support

/// Improv Wi-Fi provisioning, a component of the daemon: the session and the frames centrals
/// write (``ImprovRun``), whether this machine's Wi-Fi is connected, the joiner, and Improv's
/// timers and work (a join, a scan, the identify program), which its own ``run()`` carries out.
/// It sees a showing port and the joiners, never the bus or the module; the daemon runs it,
/// hands it the config (``reconfigure(_:)``) and what centrals write to Improv's command
/// characteristic (``written(_:central:)``); it serves the control API's Improv part
/// (`bleadvctl improv authorize`) itself.
actor ImprovProvisioner<C: Clock>: ImprovControl where C.Duration == Duration {
    /// Work that outlives the call that asked for it.
    enum Work: Sendable {
        /// Join this network.
        case join(Improv.Credentials)
        /// Run the identify command.
        case identify
        /// List the networks in range.
        case scan
        /// Follow these changes of the Wi-Fi's connection (true: connected).
        case follow(AsyncStream<Bool>)
        /// One of the timers may be due then.
        case due(Timer, C.Instant)
    }

    /// Improv's timers.
    enum Timer: Sendable {
        /// The authorization runs out.
        case authorization
        /// Improv is offered again, the Wi-Fi having been disconnected for ``offerDelay``.
        case offer
        /// Improv leaves the air, ``withdrawDelay`` after the device was provisioned.
        case withdrawal
        /// The Wi-Fi is asked about again, the joiner having failed to tell before.
        case look(attempt: Int)
        /// A central's partial command frame may have waited too long for its next part.
        case frame
    }

    /// How long the identify command may run before it is killed.
    static var identifyWait: Duration { .seconds(30) }
    /// How long the Wi-Fi must have been disconnected before Improv is offered again: long
    /// enough for NetworkManager to connect again by itself after a drop.
    static var offerDelay: Duration { .seconds(30) }
    /// How long Improv stays on air after it provisioned the device: the client reads the
    /// result, then the service stops, as Improv's specification says.
    static var withdrawDelay: Duration { .seconds(30) }
    /// How long a scan's networks answer later scans: NetworkManager's list changes with its
    /// own scans, minutes apart, so a flood of scan frames asks it once in this time.
    static var scanReuse: Duration { .seconds(10) }
    /// How often, and how many times, the Wi-Fi is asked about again when the joiner could not
    /// tell (NetworkManager still starting at boot, say): every 15 s for 2 minutes.
    static var lookInterval: Duration { .seconds(15) }
    static var lookAttempts: Int { 9 }
    /// At most one journal line a central in this time about its frames, as GATT writes are
    /// announced.
    static var logInterval: Duration { .milliseconds(100) }

    let clock: C
    let configPath: String
    let logger: Logger
    /// What joins networks for a config: in bleadvd, NetworkManager (through the join helper,
    /// or itself as root) or the config's program; in a test, a stand-in.
    let joiners: @Sendable (ImprovConfig) -> any NetworkJoining
    /// Where it runs (in bleadvd, the bus connection's event loop, as the daemon).
    nonisolated let executor: any SerialExecutor
    /// Where Improv shows itself: the daemon, once it runs this component (``startLast(showing:)``).
    weak var display: (any Showing)?
    /// The session, while `[improv]` is configured.
    var improv: ImprovRun<C.Instant>?
    /// Whether this machine's Wi-Fi is connected, and since when, once the joiner told.
    var wifi: (connected: Bool, since: C.Instant)?
    /// The connected centrals that used Improv's service on their link (read or wrote one of
    /// its characteristics, as every Improv client does once connected): those a person may
    /// authorize. A central the box itself connected to, or one that only reads other
    /// services, is not among them.
    var centrals: Set<String> = []
    /// The work asked for, which ``run()`` carries out.
    let works: AsyncStream<Work>
    let post: AsyncStream<Work>.Continuation

    /// A component for `config` (nil: `[improv]` is not configured), running on `executor`.
    init(
        config: ImprovConfig?, configPath: String, clock: C, logger: Logger, executor: any SerialExecutor,
        joiners: @escaping @Sendable (ImprovConfig) -> any NetworkJoining
    ) {
        self.improv = config.map { ImprovRun($0) }
        self.configPath = configPath
        self.clock = clock
        self.logger = logger
        self.executor = executor
        self.joiners = joiners
        (works, post) = AsyncStream<Work>.makeStream()
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Carries out the work asked for, each a child of its task group; returns when cancelled
    /// (a child of the daemon's task group).
    func run() async {
        await withDiscardingTaskGroup { group in
            for await work in works {
                group.addTask { await self.perform(work) }
            }
        }
    }

    /// Improv's first look at the Wi-Fi, once everything else is registered (NetworkManager may
    /// be slow to answer at boot): it goes on air through `display` unless the Wi-Fi is
    /// connected.
    func startLast(showing display: any Showing) async {
        self.display = display
        guard improv != nil else { return }
        improv?.offered = false
        if await look() { await putOnAir() }
    }

    /// Its part of a reloaded config: `[improv]`.
    func reconfigure(from config: DaemonConfig) async {
        await reconfigure(config.improv)
    }

    /// Takes a reloaded `[improv]` (nil: removed), and marks on its showing port whether Improv
    /// is offered (the reload serves what is offered once the config is in): a session under
    /// way goes on reconfigured, keeping whether it is offered; a newcomer is offered as the
    /// Wi-Fi says (followed from its first look on).
    func reconfigure(_ config: ImprovConfig?) async {
        if config != improv?.config {
            let newcomer = improv == nil
            let offered = improv?.offered ?? true
            improv = config.map { config in improv.map { $0.reconfigured(config) } ?? ImprovRun(config) }
            improv?.offered = offered
            if newcomer, improv != nil { improv?.offered = await look() }
        }
        await display?.mark(ImprovConfig.name, withheld: improv?.offered == true ? nil : Self.notOffered)
    }

    /// Why Improv is not on air while it is withheld: what `bleadvctl on improv` answers.
    static var notOffered: String {
        "Improv is not offered now: this machine's Wi-Fi is connected, or it was provisioned; bleadvd puts it on air when its Wi-Fi is lost"
    }

    /// What Improv withholds before its first look at the Wi-Fi.
    static var withheldAtStart: [String: String] { [ImprovConfig.name: notOffered] }

    /// The values Improv owns, which no one sets from outside, with why.
    static var owned: [String: String] {
        [ImprovConfig.name: "improv's values are Improv's own: its state changes as a client provisions the device (bleadvctl improv authorize allows it)"]
    }

    /// Carries out `work`.
    func perform(_ work: Work) async {
        switch work {
        case .join(let credentials): await join(credentials)
        case .identify: await identify()
        case .scan: await scan()
        case .follow(let changes):
            for await connected in changes { await wifiChanged(connected: connected) }
        case .due(let timer, let at):
            guard (try? await clock.sleep(until: at, tolerance: nil)) != nil else { return }
            await fired(timer, at: at)
        }
    }

    /// Timer `timer`, set for `at`, fired.
    func fired(_ timer: Timer, at: C.Instant) async {
        switch timer {
        case .authorization: await authorizationDue()
        case .offer: await offerDue()
        case .withdrawal: await withdrawalDue()
        case .look(let attempt): await look(attempt: attempt)
        case .frame: framesDue(at)
        }
    }

    // MARK: Frames

    /// A client wrote `bytes` to Improv's command characteristic: a frame (or part of one) to
    /// act on. Never logged or announced as it is: it may carry a Wi-Fi password.
    func written(_ bytes: [UInt8], central: String) async {
        centralUses(central)
        guard var run = improv else { return }
        let who = Central.named(central)
        let step: ImprovSession<C.Instant>.Step
        let (piece, evicted) = run.frames.add(bytes, from: central, at: clock.now)
        if let evicted {
            logger.warning("improv: dropped \(Central.named(evicted))'s partial frame: \(ImprovFrames<C.Instant>.centralLimit) other centrals are writing one")
        }
        switch piece {
        case .incomplete:
            improv = run
            scheduleFramesTimer()
            return
        case .overrun:
            // More bytes than the frame's length says: as malformed as a frame can be.
            step = run.session.handle([], from: central, at: clock.now)
        case .frame(let frame):
            step = run.session.handle(frame, from: central, at: clock.now)
        }
        // One line a central every interval, saying how many it stands for.
        let held = run.mayLog(central, at: clock.now, every: Self.logInterval)
        let more = held.map { $0 > 0 ? " (and \($0) more frame(s) from it since its last line)" : "" }
        var work: Work?
        var answer = step
        switch step {
        case .join(let credentials):
            logger.notice("improv: \(who) sent Wi-Fi settings for \(credentials); joining")
            work = .join(credentials)
        case .identify where run.identifying:
            // The one running answers it: a flood of identify frames starts one program.
            if let more { logger.info("improv: \(who) asked the device to identify itself while it does\(more)") }
        case .identify:
            run.identifying = true
            if let more { logger.notice("improv: \(who) asked the device to identify itself\(more)") }
            work = .identify
        case .scan where run.scanning:
            if let more { logger.info("improv: \(who) asked for the Wi-Fi networks in range while a scan runs; its result answers\(more)") }
        case .scan where run.lastScan.map { clock.now < $0.at.advanced(by: Self.scanReuse) } == true:
            if let more { logger.info("improv: \(who) asked for the Wi-Fi networks in range; the last scan answers\(more)") }
            answer = run.session.scanned(run.lastScan!.networks)
        case .scan:
            run.scanning = true
            if let more { logger.info("improv: \(who) asked for the Wi-Fi networks in range\(more)") }
            work = .scan
        case .ignored:
            if let more, let owner = run.session.authorizedCentral {
                logger.warning("improv: ignored \(who)'s frame: the authorization is \(Central.named(owner))'s\(more)")
            }
            improv = run
            return
        case .result, .none:
            if run.session.error != .none, let more { logger.warning("improv: \(who): \(Self.errorText(run.session.error))\(more)") }
        }
        let before = improv?.session
        let unchanged = run.session.state == before?.state && run.session.error == .none && before?.error == Improv.ErrorState.none
        improv = run
        if let work { post.yield(work) }
        // An identify or scan answered by the work already under way changes nothing a client
        // could wait for: nothing is notified. Errors are, each time: a client waits for them.
        if work == nil, unchanged, answer == .identify || answer == .scan { return }
        await show(answer)
    }

    /// Asks for a timer at the next partial frame's limit, unless one is set: a limit only
    /// moves later (a part comes, a newer central starts), so the one set fires first and sets
    /// the next; one sleeping task however fast centrals write.
    func scheduleFramesTimer() {
        guard improv?.framesAlarm.at == nil, let due = improv?.frames.nextDue else { return }
        _ = improv?.framesAlarm.arm(due)
        post.yield(.due(.frame, due))
    }

    /// The timer at `at` fired: partial frames whose next part did not come in time are dropped.
    func framesDue(_ at: C.Instant) {
        guard improv != nil else { return }
        improv?.framesAlarm.fired(at)
        for (central, bytes) in improv!.frames.expire(at: clock.now) {
            logger.notice("improv: dropped \(Central.named(central))'s partial frame (\(bytes) bytes): no next part within \(ImprovFrames<C.Instant>.partLimit.components.seconds) s")
        }
        scheduleFramesTimer()
    }

    /// A connected central read or wrote one of Improv's characteristics: a person may
    /// authorize it.
    func centralUses(_ central: String) {
        guard !central.isEmpty else { return }
        centrals.insert(central)
    }

    /// Every link ended (bluetoothd left, an adapter went or was powered off): an authorization
    /// ends with its central's link.
    func linksEnded() async {
        centrals = []
        if let central = improv?.session.authorizedCentral { await authorizationEnds(central) }
    }

    /// A central disconnected: an authorization of it ends (a reconnect needs a new one: the
    /// address it is bound to went over the air in the clear), and its partial frame, if it
    /// left one, is dropped.
    func centralLeft(_ central: String) async {
        centrals.remove(central)
        await authorizationEnds(central)
        guard let bytes = improv?.frames.drop(central) else { return }
        logger.notice("improv: dropped \(Central.named(central))'s partial frame (\(bytes) bytes): it disconnected")
    }

    /// `central`'s link ended: its authorization, if it holds one, ends with it, and says so.
    private func authorizationEnds(_ central: String) async {
        guard var run = improv, run.session.linkEnded(central) else { return }
        improv = run
        let joining = run.session.state == .provisioning
        logger.notice("improv: \(Central.named(central))'s authorization ended with its link\(joining ? " (its join goes on; a failed one needs a new authorization)" : "")")
        await show()
    }

    /// Shows the session as it is now, while Improv is offered: the error, the state and the
    /// result `step` carries on the service, and the state in the advertisement.
    func show(_ step: ImprovSession<C.Instant>.Step = .none) async {
        guard let run = improv, run.offered else { return }
        var values: [(characteristic: String, bytes: [UInt8])] = [("error", [run.session.error.rawValue]), ("state", [run.session.state.rawValue])]
        if case .result(let frame) = step { values.append(("result", frame)) }
        await display?.show(ImprovConfig.name, values, advertisement: run.config.advertisement(state: run.session.state))
    }
}

/// What Improv takes of BlueZ's events: frames written to its command characteristic (which no
/// other component sees: a frame may carry a Wi-Fi password, and is no value to keep), reads of
/// its characteristics (the central uses Improv: a person may authorize it), the end of a
/// central's link (which drops its partial frame) and of every link (bluetoothd left, an
/// adapter went), in order, at most ``queueLimit`` waiting.
extension ImprovProvisioner: DaemonComponent {
    /// What centrals send Improv, in order.
    enum Input: Sendable {
        /// A frame, or part of one, written to the command characteristic.
        case frame([UInt8], central: String)
        /// A read of one of Improv's characteristics.
        case read(central: String)
        /// The central's link ended.
        case left(String)
        /// Every link ended.
        case linksEnded
    }

    /// The characteristic Improv's clients write their commands to.
    static var command: GATTCharacteristicID { GATTCharacteristicID(service: ImprovConfig.name, characteristic: "command") }

    /// How many inputs wait for Improv at most (a few hundred KiB): Improv answers through the
    /// module, whose turn with BlueZ a slow bluetoothd can hold for seconds; what comes beyond
    /// it is dropped (a client waits for each answer: only a flood comes near it).
    static var queueLimit: Int { 1024 }

    nonisolated var backlog: Int? { Self.queueLimit }

    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<Input> {
        switch event {
        case .gatt(let gatt):
            if case .written(let bytes, _) = gatt.kind, gatt.characteristic == Self.command {
                return .inTurnAlone(.frame(bytes, central: gatt.central))
            }
            guard gatt.kind == .read, gatt.characteristic.service == ImprovConfig.name, !gatt.central.isEmpty else { return .pass }
            return .inTurn(.read(central: gatt.central))
        case .disconnected(let central, _): return .inTurn(.left(central))
        case .bluezVanished, .adapterRemoved, .adapterPowered(_, false, _): return .inTurn(.linksEnded)
        default: return .pass
        }
    }

    nonisolated func dropped(_ input: Input) -> String {
        guard case .frame(_, let central) = input else {
            return "improv: dropped what BlueZ said of a link: \(Self.queueLimit) inputs wait for Improv's answers already"
        }
        return "improv: dropped a write of \(Central.named(central))'s: \(Self.queueLimit) wait for Improv's answers already (and those after it, until they are answered)"
    }

    func take(_ input: Input) async {
        switch input {
        case .frame(let bytes, let central): await written(bytes, central: central)
        case .read(let central): centralUses(central)
        case .left(let central): await centralLeft(central)
        case .linksEnded: await linksEnded()
        }
    }
}
