import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import Logging
import Peripheral
import Support

/// Where pairing tells what happens in a window: the control API's `Pairing` signal
/// (`ControlAPI.Pairing`), to the client that opened it, and no one else (the journal keeps the
/// rest, without codes). The daemon's port sends it; a test's records.
package protocol PairingAnnouncing: ControlSignalling {
    /// Returns once `opener` has left the bus.
    func departure(of opener: String) async
}

/// Pairing, a component of the daemon: the window in which centrals may bond, the numeric
/// comparisons waiting for the opener's answer, and the window's timer. It sees the module (the
/// agent, the adapter's `Pairable`, the bonds) and an announcing port, never the bus; the
/// daemon runs it (``run()``), hands it the config (``reconfigure(_:bondNeeded:)``) and what
/// centrals do (``centralPaired(_:)``) and BlueZ ends (``bondEnded(_:_:)``); it serves the
/// control API's pairing part itself.
actor Pairing<C: Clock>: PairingControl where C.Duration == Duration {
    /// How long a central that was let in has to finish pairing before it counts as failed.
    static var timeout: Duration { .seconds(30) }

    /// Whether a characteristic of `services` asks for a bond (its `security` is not none): only
    /// then is the pairing agent registered.
    static func bondNeeded(_ services: some Sequence<ConfiguredService>) -> Bool {
        services.contains { $0.service.characteristics.contains { $0.security != .none } }
    }

    let module: BluetoothModule<C>
    let clock: C
    let announcer: any PairingAnnouncing
    /// The bonds this component's windows made (nil: none is recorded, so `forget` removes a
    /// bond only when asked for any).
    let bondRecord: BondRecord?
    let configPath: String
    let logger: Logger
    /// Where it runs (in bleadvd, the bus connection's event loop, as the daemon).
    nonisolated let executor: any SerialExecutor
    /// How centrals pair (`[pairing]`), as the file last read says.
    var config: PairingConfig
    /// Whether a characteristic asks for a bond (its `security` is not none).
    var bondNeeded: Bool
    /// When centrals may pair now.
    var window = PairingWindow<C.Instant>()
    /// Numeric comparisons waiting for `Confirm`, by central.
    var confirmations: [String: CheckedContinuation<Bool, Never>] = [:]
    /// The centrals whose bonds ``forget(_:any:)`` is removing: BlueZ's word that they ended
    /// is no news to the journal.
    var forgetting: Set<String> = []
    /// The instant the timer is set for, if it is.
    var alarm = Alarm<C.Instant>()
    /// The instants the timer is asked for, which ``run()`` sleeps until.
    let dues: AsyncStream<C.Instant>
    let due: AsyncStream<C.Instant>.Continuation
    /// The bonds as BlueZ gave them last, with those made and ended since; nil before its
    /// first answer.
    var knownBonds: [Bond]?
    /// How many times a bond was made or ended here: a read that began before is not kept.
    var bondsChanged = 0
    /// The read of the bonds under way, which ``bonds()`` waits for `Deadline.readWait` at most.
    var bondsReading: Task<Result<[Bond], PeripheralError>, Never>?
    /// The openers of windows, which ``run()`` follows: one that leaves the bus closes its window.
    let openers: AsyncStream<String>
    let opened: AsyncStream<String>.Continuation

    /// A component for `config`, running on `executor`.
    init(
        config: PairingConfig, bondNeeded: Bool, configPath: String, module: BluetoothModule<C>, clock: C,
        announcer: any PairingAnnouncing, bondRecord: BondRecord?, logger: Logger, executor: any SerialExecutor
    ) {
        self.config = config
        self.bondNeeded = bondNeeded
        self.configPath = configPath
        self.module = module
        self.clock = clock
        self.announcer = announcer
        self.bondRecord = bondRecord
        self.logger = logger
        self.executor = executor
        (dues, due) = AsyncStream<C.Instant>.makeStream()
        (openers, opened) = AsyncStream<String>.makeStream()
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The method the agent is registered for: the config's, when a characteristic asks for a
    /// bond. An agent makes the adapter unpairable outside its windows, which a desktop's own
    /// pairing (headphones, a keyboard) would run into: a config whose services are all open
    /// (Improv's alone, say) registers none.
    var method: PairingMethod? {
        bondNeeded ? config.method : nil
    }

    /// Has the module keep the agent registered for ``method`` (none when `offered` is false),
    /// with this component's window deciding its requests.
    func offer(_ offered: Bool = true) async {
        await module.offerPairing(offered ? method : nil, decider: PairingAgent(pairing: self))
    }

    /// Takes a reloaded config: a window is for the method it was opened for, so another
    /// method, or none, ends it; then the agent is offered for the new method.
    func reconfigure(_ config: PairingConfig, bondNeeded: Bool) async {
        let before = method
        self.config = config
        self.bondNeeded = bondNeeded
        if window.isOpen(at: clock.now), method != before {
            await closeWindow(because: method == nil ? "the reloaded config needs no pairing" : "the reloaded config pairs by \(method!.rawValue)")
        }
        await offer()
    }

    /// bleadvd is stopping: an open window is closed, and its opener told now, not when its
    /// time runs out.
    func stop() async {
        if window.isOpen(at: clock.now) { await closeWindow(because: "bleadvd is stopping") }
    }

    /// Everything is unregistered: the agent is withdrawn.
    func putBack() async {
        await offer(false)
    }

    /// Its part of a reloaded config: `[pairing]`, and whether a service needs a bond.
    func reconfigure(from config: DaemonConfig) async {
        await reconfigure(config.pairing, bondNeeded: Self.bondNeeded(config.services.values))
    }

    /// The agent is offered once the application is served, before the advertisements.
    func start(showing stage: any Showing) async {
        await offer()
    }

    /// Sleeps until each instant the timer is asked for and handles what came due then; returns
    /// when cancelled (a child of the daemon's task group).
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.followOpeners() }
            for await at in dues {
                group.addTask { [clock] in
                    guard (try? await clock.sleep(until: at, tolerance: nil)) != nil else { return }
                    await self.timerFired(at)
                }
            }
            group.cancelAll()
        }
    }

    /// Follows each window's opener until it leaves the bus (``openerLeft(_:)``); returns when
    /// cancelled.
    private func followOpeners() async {
        await withDiscardingTaskGroup { group in
            for await opener in openers {
                group.addTask { [announcer] in
                    await announcer.departure(of: opener)
                    guard !Task.isCancelled else { return }
                    await self.openerLeft(opener)
                }
            }
            group.cancelAll()
        }
    }

    /// The `bleadvctl pair` that opened the window left the bus (it ended: Ctrl-C, killed, its
    /// terminal closed): no one would see the window's codes or answer its comparisons, and a
    /// just-works window would take anyone in range until its time ran out. It closes now.
    func openerLeft(_ opener: String) async {
        guard window.isOpen(at: clock.now), window.opener == opener else { return }
        await closeWindow(because: "the bleadvctl pair that opened it left")
    }

    // MARK: Control API

    func pair(for seconds: Int?, by caller: String) async throws(PeripheralError) -> (method: PairingMethod, seconds: Int) {
        guard let method else {
            throw PeripheralError(.invalid, config.method == nil
                ? "pairing is off ([pairing] method = \"off\" in \(configPath))"
                : "no characteristic in \(configPath) asks for a bond (security is none for each): there is nothing to pair for")
        }
        let length = seconds ?? Int(config.window.components.seconds)
        guard PairingConfig.windowRange.contains(length) else {
            throw PeripheralError(.invalidValue, "a pairing window lasts \(PairingConfig.windowRange.lowerBound) to \(PairingConfig.windowRange.upperBound) seconds, not \(length)")
        }
        do {
            try await module.setPairable(true)
        } catch {
            throw PeripheralError(.failed, "BlueZ did not open the adapter to new bonds: \(error)")
        }
        if window.isOpen(at: clock.now), let opener = window.opener, opener != caller {
            // The window has one opener, to whom its codes go: the one before is told it is over.
            await announce("closed", detail: "another bleadvctl pair opened a window")
        }
        window.open(until: clock.now.advanced(by: .seconds(length)), attempts: config.attempts, method: method, opener: caller)
        opened.yield(caller)
        logger.notice("pairing: window open for \(length) s (\(method.rawValue), up to \(config.attempts) attempt(s) per central)")
        await announce("opened")
        schedule()
        return (method, length)
    }

    func confirm(_ central: String, matches: Bool, by caller: String) async throws(PeripheralError) {
        guard confirmations[central.uppercased()] != nil else {
            throw PeripheralError(.unknownName, "\(PeripheralError.quoted(central)) is not waiting for a confirmation")
        }
        guard caller == window.opener else {
            logger.warning("pairing: a confirmation for \(Central.named(central.uppercased())) from \(Untrusted.escaped(caller)), not from the bleadvctl pair that opened the window, was refused")
            throw PeripheralError(.accessDenied, "only the bleadvctl pair that opened the window answers its comparisons")
        }
        let waiting = confirmations.removeValue(forKey: central.uppercased())!
        logger.notice("pairing: \(central.uppercased()): the codes \(matches ? "match" : "do not match"), as bleadvctl says")
        waiting.resume(returning: matches)
    }

    /// The bonds, for `Bonds`: as BlueZ says within `Deadline.readWait`; past that, or at once
    /// while a call to BlueZ has waited half a second already, from what bleadvd knows: the
    /// bonds BlueZ gave last, less those forgotten or ended since, or before any answer those
    /// bleadvd's windows made (its bond record), unnamed; `timeout` when it knows none. The
    /// read goes on, and its answer is kept for the next call.
    func bonds() async throws(PeripheralError) -> [Bond] {
        let reading = bondsReading ?? readBonds()
        if await module.unanswered() == nil, let answer = await Deadline.within(Deadline.readWait, on: clock, executor: executor as? any TaskExecutor, { await reading.value }) {
            return try answer.get()
        }
        if let knownBonds { return knownBonds }
        let made = ((try? bondRecord?.centrals()) ?? []).map { Bond(central: $0) }.sorted()
        guard !made.isEmpty else {
            throw PeripheralError(.timeout, "BlueZ has not answered the read of the bonds, and bleadvd knows of none yet; try again once it answers")
        }
        return made
    }

    /// Asks BlueZ for the bonds in a task of its own, which keeps the answer (``knownBonds``).
    private func readBonds() -> Task<Result<[Bond], PeripheralError>, Never> {
        let generation = bondsChanged
        // On the loop, as everything bleadvd does: the module runs where its caller prefers.
        let task = Task(executorPreference: executor as? any TaskExecutor) { [self] in await readBonds(since: generation) }
        bondsReading = task
        return task
    }

    /// The bonds BlueZ says, kept unless a bond was made or ended here since `generation`
    /// (the read began before, and says what was).
    private func readBonds(since generation: Int) async -> Result<[Bond], PeripheralError> {
        defer { bondsReading = nil }
        do throws(PeripheralError) {
            let bonds = try await bondsFromBlueZ()
            if generation == bondsChanged { knownBonds = bonds }
            return .success(bonds)
        } catch {
            return .failure(error)
        }
    }

    /// The bonds as BlueZ says them now, however long it takes: for what acts on a bond.
    func bondsFromBlueZ() async throws(PeripheralError) -> [Bond] {
        try await PeripheralError.caught { [module] in try await module.bonds() }
    }

    /// Records the bond with `central`, made outside bleadvd's windows, as bleadvd's: it may
    /// use secured characteristics from now on (root's `bleadvctl pair --adopt`).
    func adopt(_ central: String) async throws(PeripheralError) {
        let address = try Self.address(central)
        guard try await bondsFromBlueZ().contains(where: { $0.central == address }) else {
            throw PeripheralError(.unknownName, "no central \(address) is bonded with the adapter")
        }
        guard let bondRecord else { return }
        try bondRecord.add(address)
        logger.notice("pairing: \(address) adopted, as bleadvctl says: its bond (made outside bleadvd's windows) may use secured characteristics")
    }

    /// `text` as an address, in capitals as BlueZ writes it.
    /// - Throws: `invalidValue` when it is none.
    static func address(_ text: String) throws(PeripheralError) -> String {
        if let refusal = Bond.refusal(ofAddress: text) { throw PeripheralError(.invalidValue, refusal) }
        return text.uppercased()
    }

    func forget(_ central: String, any: Bool) async throws(PeripheralError) {
        let address = try Self.address(central)
        if !any {
            let made: Bool
            do {
                made = try bondRecord?.centrals().contains(address) ?? false
            } catch {
                throw PeripheralError(.failed, "\(error.message); bleadvctl forget --any \(address) removes the bond all the same")
            }
            if !made {
                guard try await bondsFromBlueZ().contains(where: { $0.central == address }) else {
                    throw PeripheralError(.unknownName, "no central \(address) is bonded with the adapter")
                }
                logger.warning("pairing: forget \(address) refused: it did not bond in a bleadvd pairing window")
                throw PeripheralError(.accessDenied, "\(address) did not bond in a bleadvd pairing window (a desktop's own pairing made it, say), so bleadvd leaves it; bleadvctl forget --any \(address) removes it all the same")
            }
        }
        forgetting.insert(address)
        defer { forgetting.remove(address) }
        bondGone(address)
        do {
            try await PeripheralError.caught { [module] in try await module.forget(address) }
        } catch where error.code == .unknownName {
            // Removed by someone else (bluetoothctl remove): the record forgets it too.
            try? bondRecord?.remove(address)
            throw error
        }
        do {
            try bondRecord?.remove(address)
        } catch {
            logger.error("pairing: \(error.message)")
        }
    }

    // MARK: The agent's requests

    /// Whether the central may go on, as the window says; logged and signalled either way. A
    /// numeric comparison waits for `Confirm` (or the request's time out).
    func decide(_ request: PairingRequest) async -> Bool {
        let central = Central.named(request.central)
        if window.supersedes(request) { await failed(request.central, because: "it asks again: a wrong code, or it gave up") }
        switch window.decide(request, at: clock.now) {
        case .again:
            return true
        case .refuse(let reason):
            logger.warning("pairing: refused \(central) (\(request.method.rawValue)): \(reason)")
            await announce("refused", central: request.central, detail: reason)
            return false
        case .allow:
            schedule()
        }
        switch request.kind {
        case .authorize:
            logger.notice("pairing: \(central) asks to pair (just works); let in")
            await announce("requested", central: request.central)
            return true
        case .passkey:
            // The code goes to the bleadvctl pair that opened the window alone: group adm reads
            // the journal, and a passkey there would let its members bond without root.
            logger.notice("pairing: \(central) asks to pair; its passkey went to bleadvctl pair, to be typed on it")
            await announce("requested", central: request.central, detail: request.code!)
            return true
        case .confirm:
            logger.notice("pairing: \(central) asks to pair; its code went to bleadvctl pair, which answers whether the central shows it")
            await announce("confirm", central: request.central, detail: request.code!)
            // The window may have closed while the question went out: nothing would answer.
            let matches = window.isOpen(at: clock.now) ? await withCheckedContinuation { confirmations[request.central] = $0 } : false
            if !matches {
                window.drop(request.central)
                logger.warning("pairing: refused \(central): its code was not confirmed")
                await announce("refused", central: request.central, detail: "its code was not confirmed")
            }
            return matches
        }
    }

    /// bluetoothd gave up on its request: a confirmation awaited is answered no.
    func cancelConfirmations() {
        for (_, waiting) in confirmations { waiting.resume(returning: false) }
        confirmations = [:]
    }

    /// A central finished pairing: one let in by the window closes it (a window is for one bond).
    func centralPaired(_ central: String) async {
        bondsChanged += 1  // a read under way may not have it: the next one will
        guard window.paired(central) else {
            logger.notice("pairing: \(central) paired")
            return
        }
        logger.notice("pairing: \(central) paired and bonded")
        do {
            try bondRecord?.add(central)
        } catch {
            logger.error("pairing: \(error.message); bleadvctl forget needs --any for \(central)")
        }
        await announce("paired", central: central)
        if window.isOpen(at: clock.now) { await closeWindow(because: "\(central) bonded") }
    }

    /// BlueZ ended the bond with `central` (`how`), whoever ended it: it drops out of the
    /// record at once, so that it reads no secured value and gets no change of one, and a
    /// central that bonds with its address later outside a window (under another program's
    /// agent: any local user may register one) is not admitted. Said once, for a central the
    /// record lists; the end of a bond root asked ``forget(_:any:)`` for is not said again.
    func bondEnded(_ central: String, _ how: BondEnd) {
        bondGone(central)
        guard let bondRecord else { return }
        do {
            guard try bondRecord.centrals().contains(central) else { return }
            try bondRecord.remove(central)
        } catch {
            logger.error("pairing: the bond with \(Central.named(central)) ended in BlueZ (\(how.rawValue)), and the record may still admit it: \(error.message)")
            return
        }
        guard !forgetting.contains(central) else { return }
        logger.notice("pairing: bond with \(Central.named(central)) ended in BlueZ (\(how.rawValue)): no longer admitted")
    }

    /// What bleadvd knows of the bonds loses `central`'s, and a read under way is not kept.
    private func bondGone(_ central: String) {
        bondsChanged += 1
        knownBonds?.removeAll { $0.central == central }
    }

    // MARK: The window's time

    /// Asks ``run()`` for a timer at the window's next due instant, unless one is set for it.
    func schedule() {
        guard let at = window.nextDue(timeout: Self.timeout), alarm.arm(at) else { return }
        due.yield(at)
    }

    /// The timer at `at` fired: requests that got no bond in time failed; a window whose time
    /// ran out closes.
    func timerFired(_ at: C.Instant) async {
        alarm.fired(at)
        let now = clock.now
        for central in window.expire(at: now, timeout: Self.timeout) {
            await failed(central, because: "no bond within \(Self.timeout.components.seconds) s: a wrong code, or it gave up")
        }
        if let until = window.until, until <= now { await closeWindow(because: "its time ran out") }
        schedule()
    }

    /// An attempt of `central` that was let in ended without a bond: logged with its address.
    func failed(_ central: String, because reason: String) async {
        if let waiting = confirmations.removeValue(forKey: central) { waiting.resume(returning: false) }
        logger.warning("pairing: \(Central.named(central)) did not bond (\(reason))")
        await announce("failed", central: central, detail: reason)
    }

    /// Closes the window: the adapter takes no new bonds.
    func closeWindow(because reason: String) async {
        window.close()
        // A comparison still unanswered would bond after the adapter closed: it is refused.
        cancelConfirmations()
        do {
            try await module.setPairable(false)
        } catch {
            logger.error("pairing: BlueZ did not close the adapter to new bonds (\(error)); the agent refuses every request until a window opens")
        }
        logger.notice("pairing: window closed: \(reason)")
        await announce("closed", detail: reason)
    }

    /// Tells whoever opened the window what happened in it.
    func announce(_ event: String, central: String = "", detail: String = "") async {
        guard let opener = window.opener else { return }
        await announcer.emit(ControlAPI.Pairing(event: event, central: central, detail: detail), to: opener)
    }
}

/// The agent's decider: the pairing component, held weakly (the module keeps the decider for as
/// long as the agent is registered, and the component keeps the module).
struct PairingAgent<C: Clock>: PairingDecider where C.Duration == Duration {
    weak let pairing: Pairing<C>?

    func decide(_ request: PairingRequest) async -> Bool {
        await pairing?.decide(request) ?? false
    }

    func cancel() async {
        await pairing?.cancelConfirmations()
    }
}

/// What Pairing takes of BlueZ's events: a central that finished pairing (it records the bond
/// and may close the window through the module, whose turn a slow bluetoothd holds) and a bond
/// that ended (dropped from the record), in turn through its queue, in the bus's order.
extension Pairing: DaemonComponent {
    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<PeripheralEvent> {
        switch event {
        case .paired, .bondEnded: .inTurn(event)
        default: .pass
        }
    }

    func take(_ event: PeripheralEvent) async {
        switch event {
        case .paired(let central, _): await centralPaired(central)
        case .bondEnded(let central, _, let how): bondEnded(central, how)
        default: break
        }
    }
}
