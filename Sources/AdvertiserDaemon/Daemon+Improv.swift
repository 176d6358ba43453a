#if canImport(Glibc)
import Glibc
#endif
import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import Logging
package import Peripheral

/// What joins a Wi-Fi network for Improv: ``NetworkManagerJoiner``, or ``ProgramJoiner`` (the
/// config's program).
package protocol NetworkJoining: Sendable {
    /// Joins the network and returns the address it got (nil when it cannot tell).
    /// - Throws: when it could not be joined (a wrong password, no such network, time out).
    func join(_ credentials: Improv.Credentials) async throws -> String?
    /// The Wi-Fi networks in range, strongest first.
    /// - Throws: when they cannot be listed.
    func networks() async throws -> [Improv.Network]
}

/// Improv as the daemon runs it: the state machine (with its configuration) and the frame
/// being written.
struct ImprovRun<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    var session: ImprovSession<Instant>
    var assembler = Improv.Assembler()

    /// A run of `config`, its device info read from this machine.
    init(_ config: ImprovConfig) {
        session = ImprovSession(config, deviceInfo: Self.deviceInfo(config))
    }

    /// The configuration.
    var config: ImprovConfig { session.config }

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
        case .due(let at):
            guard (try? await clock.sleep(until: at, tolerance: nil)) != nil else { return }
            await improvDue()
        }
    }

    /// Runs the identify command, and reaps it (killed after ``identifyWait``).
    func improvIdentify() async {
        guard let command = improv?.config.identify else { return }
        let pid: Int32
        do {
            pid = try Spawn.start(command[0], command, stdio: nil)
        } catch {
            logger.warning("improv: could not run \(Untrusted.quoted(command[0])): \(String(cString: strerror(error.code)))")
            return
        }
        var waited = Duration.zero
        while Spawn.reaped(pid) == nil {
            guard waited < Self.identifyWait, (try? await clock.sleep(for: .milliseconds(100))) != nil else {
                Spawn.stop(pid)
                logger.warning("improv: \(Untrusted.quoted(command[0])) still ran after \(Self.identifyWait.components.seconds) s; killed")
                return
            }
            waited += .milliseconds(100)
        }
    }

    /// A client wrote `bytes` to Improv's command characteristic: a frame (or part of one) to
    /// act on. Never logged or announced as it is: it may carry a Wi-Fi password.
    func improvWritten(_ bytes: [UInt8], central: String) async {
        guard var run = improv else { return }
        let who = central.isEmpty ? "a central" : central
        let step: ImprovSession<C.Instant>.Step
        switch run.assembler.add(bytes) {
        case .incomplete:
            improv = run
            return
        case .overrun:
            // More bytes than the frame's length says: as malformed as a frame can be.
            step = run.session.handle([], at: clock.now)
        case .frame(let frame):
            step = run.session.handle(frame, at: clock.now)
        }
        improv = run
        switch step {
        case .join(let credentials):
            logger.notice("improv: \(who) sent Wi-Fi settings for \(credentials); joining")
            post.yield(.improv(.join(credentials)))
        case .identify:
            logger.notice("improv: \(who) asked the device to identify itself")
            post.yield(.improv(.identify))
        case .scan:
            logger.info("improv: \(who) asked for the Wi-Fi networks in range")
            post.yield(.improv(.scan))
        case .result, .none:
            if run.session.error != .none { logger.warning("improv: \(who): \(Self.improvErrorText(run.session.error))") }
        }
        await showImprov(step)
    }

    /// Shows the session as it is now: the error, the state and the result `step` carries on
    /// the service (each set at once and in that order, so that a client waiting for one of
    /// them is notified even of a value it had before), and the state in the advertisement.
    func showImprov(_ step: ImprovSession<C.Instant>.Step = .none) async {
        guard let run = improv else { return }
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
        if let until = run.session.authorizedUntil { post.yield(.improv(.due(until))) }
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

    /// What joins networks: the one injected, or the config's.
    func networkJoiner(_ config: ImprovConfig) -> any NetworkJoining {
        if let joiner { return joiner }
        switch config.joiner {
        case .networkManager: return NetworkManagerJoiner(connection: connection, clock: clock)
        case .program(let program): return ProgramJoiner(program: program, clock: clock)
        }
    }

    /// Lists the networks in range (a child of the loop's task group), then answers the client.
    func improvScan() async {
        guard let config = improv?.config else { return }
        var networks: [Improv.Network] = []
        do {
            networks = try await networkJoiner(config).networks()
            logger.info("improv: \(networks.count) Wi-Fi network(s) in range")
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
            logger.notice("improv: joined \(credentials)\(address.map { " as \($0)" } ?? "")")
        } catch {
            guard var run = improv else { return }
            run.session.failedToJoin(at: clock.now)
            improv = run
            logger.warning("improv: could not join \(credentials): \(error)")
            if let until = run.session.authorizedUntil { post.yield(.improv(.due(until))) }
            step = .none
        }
        await showImprov(step)
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
