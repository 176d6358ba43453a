#if canImport(Glibc)
import Glibc
#endif
import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import Logging
package import Peripheral

/// What joins a Wi-Fi network for Improv: ``HelperJoiner`` (NetworkManager through the join
/// helper), ``NetworkManagerJoiner`` (bleadvd run as root), or ``ProgramJoiner`` (the config's
/// program).
package protocol NetworkJoining: Sendable {
    /// Joins the network and returns the address it got (nil when it cannot tell).
    /// - Throws: when it could not be joined (a wrong password, no such network, time out).
    func join(_ credentials: Improv.Credentials) async throws -> String?
    /// The Wi-Fi networks in range, strongest first.
    /// - Throws: when they cannot be listed.
    func networks() async throws -> [Improv.Network]
    /// Whether this machine's Wi-Fi is connected, and its changes from then on; nil when the
    /// joiner cannot tell.
    /// - Throws: when it could not be asked.
    func wifi() async throws -> WifiWatch?
}

/// Whether this machine's Wi-Fi is connected now, and whenever that changes.
package struct WifiWatch: Sendable {
    /// Whether it is connected now.
    package var connected: Bool
    /// Each change from then on: true when it connected, false when it is no longer.
    package var changes: AsyncStream<Bool>

    package init(connected: Bool, changes: AsyncStream<Bool>) {
        self.connected = connected
        self.changes = changes
    }
}

/// Improv as the daemon runs it: the state machine (with its configuration) and the frames
/// centrals are writing.
struct ImprovRun<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    var session: ImprovSession<Instant>
    var frames = ImprovFrames<Instant>()
    /// The instant the partial frames' timer is set for, if it is.
    var framesAlarm = Alarm<Instant>()
    /// Whether Improv is on air (its advertisement and its service): not while this machine's
    /// Wi-Fi is connected, nor from ``Daemon/improvWithdrawDelay`` after it was provisioned.
    var offered = true
    /// Whether the identify program runs: one at a time, however many frames ask.
    var identifying = false
    /// Whether a scan is under way: its result answers every scan asked meanwhile.
    var scanning = false
    /// The last scan's networks and when they came: they answer every scan asked within
    /// ``Daemon/improvScanReuse`` of it, without asking NetworkManager again.
    var lastScan: (networks: [Improv.Network], at: Instant)?
    /// When each central's last journal line about its frames was written, and how many were
    /// held back since: at most one a central every interval, as GATT writes are announced.
    var lines: [String: (at: Instant, held: Int)] = [:]

    /// Whether a journal line about `central`'s frame may be written at `now`: the number of
    /// lines held back since its last one, or nil when this one is held back too.
    mutating func mayLog(_ central: String, at now: Instant, every interval: Duration) -> Int? {
        if let last = lines[central], now < last.at.advanced(by: interval) {
            lines[central]!.held += 1
            return nil
        }
        let held = lines[central]?.held ?? 0
        // Only centrals heard from within the interval are kept: as many as write at once.
        lines = lines.filter { now < $0.value.at.advanced(by: interval) }
        lines[central] = (now, 0)
        return held
    }

    /// A run of `config`, its device info read from this machine.
    init(_ config: ImprovConfig) {
        session = ImprovSession(config, deviceInfo: Self.deviceInfo(config))
    }

    /// The configuration.
    var config: ImprovConfig { session.config }

    /// The run a reload that changed `[improv]` goes on with: the session reconfigured (a join
    /// under way stays the one), the partial frames and the work in flight kept.
    func reconfigured(_ config: ImprovConfig) -> ImprovRun {
        var next = self
        next.session = session.reconfigured(config, deviceInfo: Self.deviceInfo(config))
        return next
    }

    /// What Improv's device info answers: bleadvd, its version, the hardware (the board's model
    /// from the device tree, or Linux), the device's name (the hostname).
    static func deviceInfo(_ config: ImprovConfig) -> [String] {
        var name = [CChar](repeating: 0, count: 65)
        let hostname = gethostname(&name, name.count - 1) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "linux"
        return ["bleadvd", ControlAPI.version, config.hardware ?? boardModel() ?? "Linux", config.deviceName ?? hostname]
    }

    /// The board's model as the device tree names it (`Raspberry Pi 4 Model B Rev 1.4`), or nil.
    private static func boardModel() -> String? {
        guard let file = fopen("/proc/device-tree/model", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = fread(&buffer, 1, buffer.count, file)
        let model = String(decoding: buffer[..<count].prefix { $0 != 0 }, as: UTF8.self)
        return model.isEmpty ? nil : model
    }
}

extension Daemon {
    /// The characteristic Improv's clients write their commands to.
    static var improvCommand: GATTCharacteristicID { GATTCharacteristicID(service: ImprovConfig.name, characteristic: "command") }

    /// How long the identify command may run before it is killed.
    static var identifyWait: Duration { .seconds(30) }

    /// Carries out Improv's work: a child of the loop's task group.
    func improvWork(_ work: ImprovWork) async {
        switch work {
        case .join(let credentials): await improvJoin(credentials)
        case .identify: await improvIdentify()
        case .scan: await improvScan()
        case .follow(let changes):
            for await connected in changes { await improvWifi(connected: connected) }
        case .due(let timer, let at):
            guard (try? await clock.sleep(until: at, tolerance: nil)) != nil else { return }
            switch timer {
            case .authorization: await improvDue()
            case .offer: await improvOfferDue()
            case .withdrawal: await improvWithdrawalDue()
            case .look(let attempt): await improvLook(attempt: attempt)
            case .frame: await improvFramesDue(at)
            }
        }
    }

    /// Runs the identify command, and reaps it (killed after ``identifyWait``).
    func improvIdentify() async {
        guard let command = improv?.config.identify else { return }
        defer { improv?.identifying = false }
        let pid: Int32
        do {
            pid = try Spawn.start(command[0], command, stdio: nil, group: true)
        } catch {
            logger.warning("improv: could not run \(Untrusted.quoted(command[0])): \(String(cString: strerror(error.code)))")
            return
        }
        if await Spawn.exit(of: pid, within: Self.identifyWait, polling: .milliseconds(100), on: clock) == nil {
            logger.warning("improv: \(Untrusted.quoted(command[0])) still ran after \(Self.identifyWait.components.seconds) s; killed")
        }
    }

    /// A client wrote `bytes` to Improv's command characteristic: a frame (or part of one) to
    /// act on. Never logged or announced as it is: it may carry a Wi-Fi password.
    func improvWritten(_ bytes: [UInt8], central: String) async {
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
            scheduleImprovFramesTimer()
            return
        case .overrun:
            // More bytes than the frame's length says: as malformed as a frame can be.
            step = run.session.handle([], at: clock.now)
        case .frame(let frame):
            step = run.session.handle(frame, at: clock.now)
        }
        // One line a central every interval, saying how many it stands for.
        let held = run.mayLog(central, at: clock.now, every: Self.updateInterval)
        let more = held.map { $0 > 0 ? " (and \($0) more frame(s) from it since its last line)" : "" }
        var work: ImprovWork?
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
        case .scan where run.lastScan.map { clock.now < $0.at.advanced(by: Self.improvScanReuse) } == true:
            if let more { logger.info("improv: \(who) asked for the Wi-Fi networks in range; the last scan answers\(more)") }
            answer = run.session.scanned(run.lastScan!.networks)
        case .scan:
            run.scanning = true
            if let more { logger.info("improv: \(who) asked for the Wi-Fi networks in range\(more)") }
            work = .scan
        case .result, .none:
            if run.session.error != .none, let more { logger.warning("improv: \(who): \(Self.improvErrorText(run.session.error))\(more)") }
        }
        let before = improv?.session
        let unchanged = run.session.state == before?.state && run.session.error == .none && before?.error == Improv.ErrorState.none
        improv = run
        if let work { post.yield(.improv(work)) }
        // An identify or scan answered by the work already under way changes nothing a client
        // could wait for: nothing is notified. Errors are, each time: a client waits for them.
        if work == nil, unchanged, answer == .identify || answer == .scan { return }
        await showImprov(answer)
    }

    /// Asks the loop for a timer at the next partial frame's limit, unless one is set: a limit
    /// only moves later (a part comes, a newer central starts), so the one set fires first and
    /// sets the next; one sleeping task however fast centrals write.
    func scheduleImprovFramesTimer() {
        guard improv?.framesAlarm.at == nil, let due = improv?.frames.nextDue else { return }
        _ = improv?.framesAlarm.arm(due)
        post.yield(.improv(.due(.frame, due)))
    }

    /// The timer at `at` fired: partial frames whose next part did not come in time are dropped.
    func improvFramesDue(_ at: C.Instant) async {
        guard improv != nil else { return }
        improv?.framesAlarm.fired(at)
        for (central, bytes) in improv!.frames.expire(at: clock.now) {
            logger.notice("improv: dropped \(Central.named(central))'s partial frame (\(bytes) bytes): no next part within \(ImprovFrames<C.Instant>.partLimit.components.seconds) s")
        }
        scheduleImprovFramesTimer()
    }

    /// A central disconnected: its partial frame, if it left one, is dropped.
    func improvCentralLeft(_ central: String) {
        guard let bytes = improv?.frames.drop(central) else { return }
        logger.notice("improv: dropped \(Central.named(central))'s partial frame (\(bytes) bytes): it disconnected")
    }

    /// Shows the session as it is now: the error, the state and the result `step` carries on
    /// the service (each set at once and in that order, so that a client waiting for one of
    /// them is notified even of a value it had before), and the state in the advertisement.
    func showImprov(_ step: ImprovSession<C.Instant>.Step = .none) async {
        guard let run = improv, run.offered else { return }
        let name = ImprovConfig.name
        var values: [(String, [UInt8])] = [("error", [run.session.error.rawValue]), ("state", [run.session.state.rawValue])]
        if case .result(let frame) = step { values.append(("result", frame)) }
        for (characteristic, bytes) in values {
            services[name]?.held { $0.store(.bytes(bytes), bytes: bytes, for: characteristic) }
            try? await module.setValue(bytes, of: GATTCharacteristicID(service: name, characteristic: characteristic))
        }
        let advertisement = run.config.advertisement(state: run.session.state)
        if entries[name]?.values.live != advertisement, entries[name]?.values.set(advertisement) == true {
            post.yield(.send(.advertisement(name)))
        }
    }

    /// `bleadvctl improv authorize`: a person allows provisioning for the configured time.
    package func improvAuthorize() async throws(PeripheralError) -> Int {
        guard var run = improv else {
            throw PeripheralError(.invalid, "Improv is not offered ([improv] in \(configPath))")
        }
        guard run.offered else {
            throw PeripheralError(.invalid, "Improv is not on air now: this machine's Wi-Fi is connected, or it was provisioned")
        }
        guard run.config.needsAuthorization else {
            throw PeripheralError(.invalid, "Improv needs no authorization here ([improv] authorization = \"none\" in \(configPath))")
        }
        guard run.session.state == .authorizationRequired || run.session.state == .authorized else {
            throw PeripheralError(.invalid, "the device is \(run.session.state == .provisioning ? "joining a network" : "provisioned already")")
        }
        run.session.authorize(at: clock.now)
        improv = run
        let seconds = Int(run.config.authorization.components.seconds)
        logger.notice("improv: authorized for \(seconds) s, as bleadvctl says")
        if let until = run.session.authorizedUntil { post.yield(.improv(.due(.authorization, until))) }
        await showImprov()
        return seconds
    }

    /// The authorization's time came: it ends unless it was renewed since.
    func improvDue() async {
        guard var run = improv, run.session.expire(at: clock.now) else { return }
        improv = run
        logger.notice("improv: the authorization ran out")
        await showImprov()
    }

    /// What joins networks: the one injected, or the config's. Through NetworkManager, bleadvd
    /// running as its own user asks the join helper, which runs as root (``JoinHelper``); run
    /// as root itself, it asks NetworkManager.
    func networkJoiner(_ config: ImprovConfig) -> any NetworkJoining {
        if let joiner { return joiner }
        switch config.joiner {
        case .networkManager where geteuid() != 0: return HelperJoiner(connection: connection, clock: clock)
        case .networkManager: return NetworkManagerJoiner(connection: connection, clock: clock)
        case .program(let program): return ProgramJoiner(program: program, clock: clock)
        }
    }

    /// Lists the networks in range (a child of the loop's task group), then answers the client.
    func improvScan() async {
        guard let config = improv?.config else { return }
        defer { improv?.scanning = false }
        var networks: [Improv.Network] = []
        do {
            networks = try await networkJoiner(config).networks()
            logger.info("improv: \(networks.count) Wi-Fi network(s) in range")
            improv?.lastScan = (networks, clock.now)
        } catch {
            logger.warning("improv: could not list the Wi-Fi networks in range: \(error)")
        }
        guard let run = improv else { return }
        await showImprov(run.session.scanned(networks))
    }

    /// Joins the network (a child of the loop's task group), then shows how it went.
    func improvJoin(_ credentials: Improv.Credentials) async {
        guard let config = improv?.config else { return }
        let joiner = networkJoiner(config)
        let step: ImprovSession<C.Instant>.Step
        do {
            let address = try await joiner.join(credentials)
            guard var run = improv else { return }
            let redirect = run.config.redirectURL.map { url in url.replacing("{address}", with: address ?? "") }
            step = run.session.joined(redirect: redirect)
            improv = run
            post.yield(.improv(.due(.withdrawal, clock.now.advanced(by: Self.improvWithdrawDelay))))
            logger.notice("improv: joined \(credentials)\(address.map { " as \($0)" } ?? "")")
        } catch {
            guard var run = improv else { return }
            run.session.failedToJoin(at: clock.now)
            improv = run
            logger.warning("improv: could not join \(credentials): \(error)")
            if let until = run.session.authorizedUntil { post.yield(.improv(.due(.authorization, until))) }
            step = .none
        }
        await showImprov(step)
    }

    // MARK: Offered while the Wi-Fi is not connected

    /// How long the Wi-Fi must have been disconnected before Improv is offered again: long
    /// enough for NetworkManager to connect again by itself after a drop.
    static var improvOfferDelay: Duration { .seconds(30) }

    /// How long Improv stays on air after it provisioned the device: the client reads the
    /// result, then the service stops, as Improv's specification says.
    static var improvWithdrawDelay: Duration { .seconds(30) }
    /// How long a scan's networks answer later scans: NetworkManager's list changes with its
    /// own scans, minutes apart, so a flood of scan frames asks it once in this time.
    static var improvScanReuse: Duration { .seconds(10) }

    /// How often, and how many times, the Wi-Fi is asked about again when the joiner could not
    /// tell (NetworkManager still starting at boot, say): every 15 s for 2 minutes.
    static var improvLookInterval: Duration { .seconds(15) }
    static var improvLookAttempts: Int { 9 }

    /// Improv's first look at the Wi-Fi (at start, after everything else is registered, and
    /// when a reload adds `[improv]`): returns whether Improv is to be offered, which it is only
    /// while the Wi-Fi is not connected; the changes are followed from then on. A joiner that
    /// cannot tell (a program) has it offered; one that could not be asked is asked again
    /// (`attempt`, Improv offered meanwhile).
    @discardableResult
    func improvLook(attempt: Int = 1) async -> Bool {
        guard let config = improv?.config else { return false }
        if let wifi { return !wifi.connected }
        let watch: WifiWatch?
        do {
            watch = try await networkJoiner(config).wifi()
        } catch {
            guard attempt < Self.improvLookAttempts else {
                logger.warning("improv: offered whether or not the Wi-Fi is connected, which could not be told: \(error)")
                return true
            }
            if attempt == 1 {
                logger.warning("improv: offered until it can be told whether the Wi-Fi is connected (asked again every \(Self.improvLookInterval.components.seconds) s for 2 min): \(error)")
            }
            post.yield(.improv(.due(.look(attempt: attempt + 1), clock.now.advanced(by: Self.improvLookInterval))))
            return true
        }
        guard let watch else { return true }
        post.yield(.improv(.follow(watch.changes)))
        guard attempt == 1 else {
            // On air since the start: the Wi-Fi told late takes it off, as a change would.
            await improvWifi(connected: watch.connected)
            return !watch.connected
        }
        wifi = (watch.connected, clock.now)
        if watch.connected { logger.notice("improv: not offered: this machine's Wi-Fi is connected") }
        return !watch.connected
    }

    /// Puts Improv on air: its service in the application, its advertisement on.
    func improvPutOnAir() async {
        improv?.offered = true
        await module.serve(application)
        try? await module.on(ImprovConfig.name)
    }

    /// The Wi-Fi connected, or is no longer: Improv leaves the air at once (not while its own
    /// join is under way or its result is being read: ``improvWithdrawDelay`` does it then), or
    /// is offered again once the Wi-Fi has stayed disconnected for ``improvOfferDelay``.
    func improvWifi(connected: Bool) async {
        guard wifi?.connected != connected else { return }
        wifi = (connected, clock.now)
        guard let run = improv else { return }
        if connected {
            logger.info("improv: this machine's Wi-Fi connected")
            guard run.offered, run.session.state != .provisioning, run.session.state != .provisioned else { return }
            await improvWithdraw(because: "this machine's Wi-Fi is connected")
        } else if run.offered {
            logger.info("improv: this machine's Wi-Fi is not connected")
        } else {
            post.yield(.improv(.due(.offer, clock.now.advanced(by: Self.improvOfferDelay))))
            logger.notice("improv: this machine's Wi-Fi is not connected; Improv is offered in \(Self.improvOfferDelay.components.seconds) s unless it connects again")
        }
    }

    /// Offers Improv again, with a new session, if the Wi-Fi stayed disconnected.
    func improvOfferDue() async {
        guard let run = improv, !run.offered, let wifi, !wifi.connected,
              clock.now >= wifi.since.advanced(by: Self.improvOfferDelay) else { return }
        improv = ImprovRun(run.config)
        services[ImprovConfig.name] = Coalesced(run.config.service(state: run.config.firstState, error: .none))
        await improvPutOnAir()
        logger.notice("improv: offered: the Wi-Fi has not been connected for \(Self.improvOfferDelay.components.seconds) s")
        await showImprov()
    }

    /// Takes Improv off the air once its result had time to be read.
    func improvWithdrawalDue() async {
        guard let run = improv, run.offered, run.session.state == .provisioned else { return }
        await improvWithdraw(because: "the device was provisioned \(Self.improvWithdrawDelay.components.seconds) s ago")
    }

    /// Takes Improv's advertisement and service off the air.
    func improvWithdraw(because reason: String) async {
        improv?.offered = false
        try? await module.off(ImprovConfig.name)
        await module.serve(application)
        logger.notice("improv: no longer offered: \(reason)")
        if let wifi, !wifi.connected { post.yield(.improv(.due(.offer, clock.now.advanced(by: Self.improvOfferDelay)))) }
    }

    static func improvErrorText(_ error: Improv.ErrorState) -> String {
        switch error {
        case .none: "no error"
        case .invalidRPC: "a malformed frame (invalid RPC)"
        case .unknownRPC: "a command this device does not offer (unknown RPC)"
        case .unableToConnect: "unable to connect"
        case .notAuthorized: "not authorized: bleadvctl improv authorize allows provisioning"
        case .badHostname: "a bad hostname"
        case .unknown: "refused (a join is under way)"
        }
    }
}
