#if canImport(Glibc)
import Glibc
#endif
import AdvertiserConfig
import AdvertiserControl
import Logging
import Peripheral
import Support

/// What Improv does for a person and for the Wi-Fi: authorizing a central, identify, scan and
/// join, and offering Improv while the Wi-Fi is not connected.
extension ImprovProvisioner {
    /// `bleadvctl improv authorize [ADDRESS]`: a person allows one central to provision for the
    /// configured time: `requested` (an address; empty: the one central connected, refused when
    /// there are none or several, which the refusal lists). Returns how long, in seconds, and
    /// the central's address. The control API's Improv part (``ImprovControl``).
    func improvAuthorize(_ requested: String) async throws(PeripheralError) -> (seconds: Int, central: String) {
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
        let central = try centralToAuthorize(requested)
        run.session.authorize(central, at: clock.now)
        improv = run
        let seconds = Int(run.config.authorization.components.seconds)
        logger.notice("improv: authorized \(central) for \(seconds) s, as bleadvctl says; other centrals' frames are ignored meanwhile")
        if let until = run.session.authorizedUntil { post.yield(.due(.authorization, until)) }
        await show()
        return (seconds, central)
    }

    /// The connected central `requested` names (empty: the only one connected).
    func centralToAuthorize(_ requested: String) throws(PeripheralError) -> String {
        let connected = centrals.sorted().joined(separator: ", ")
        guard requested.isEmpty else {
            if let refusal = Bond.refusal(ofAddress: requested) { throw PeripheralError(.invalid, refusal) }
            let address = requested.uppercased()
            guard centrals.contains(address) else {
                throw PeripheralError(.invalid, "\(address) is not connected to Improv" + (centrals.isEmpty ? "; no central is" : "; connected: \(connected)"))
            }
            return address
        }
        switch centrals.count {
        case 0: throw PeripheralError(.invalid, "no central is connected to Improv: connect the Improv client (Home Assistant's Improv set-up) first, then authorize it")
        case 1: return centrals.first!
        default: throw PeripheralError(.invalid, "\(centrals.count) centrals are connected to Improv: \(connected); name the one your Improv client runs on: bleadvctl improv authorize ADDRESS")
        }
    }

    /// The authorization's time came: it ends unless it was renewed since.
    func authorizationDue() async {
        guard var run = improv, run.session.expire(at: clock.now) else { return }
        improv = run
        logger.notice("improv: the authorization ran out")
        await show()
    }

    /// Runs the identify command, and reaps it (killed after ``identifyWait``).
    func identify() async {
        guard let command = improv?.config.identify else { return }
        defer { improv?.identifying = false }
        let pid: Int32
        do {
            pid = try Spawn.start(command[0], command, stdio: nil, group: true, expendable: true)
        } catch {
            logger.warning("improv: could not run \(Untrusted.quoted(command[0])): \(String(cString: strerror(error.code)))")
            return
        }
        if await Spawn.exit(of: pid, within: Self.identifyWait, polling: .milliseconds(100), on: clock, executor: executor as? any TaskExecutor) == nil {
            logger.warning("improv: \(Untrusted.quoted(command[0])) still ran after \(Self.identifyWait.components.seconds) s; killed")
        }
    }

    /// Lists the networks in range, then answers the client.
    func scan() async {
        guard let config = improv?.config else { return }
        defer { improv?.scanning = false }
        var networks: [Improv.Network] = []
        do {
            networks = try await joiners(config).networks()
            logger.info("improv: \(networks.count) Wi-Fi network(s) in range")
            improv?.lastScan = (networks, clock.now)
        } catch {
            logger.warning("improv: could not list the Wi-Fi networks in range: \(error)")
        }
        guard let run = improv else { return }
        await show(run.session.scanned(networks))
    }

    /// Joins the network, then shows how it went.
    func join(_ credentials: Improv.Credentials) async {
        guard let config = improv?.config else { return }
        let joiner = joiners(config)
        let step: ImprovSession<C.Instant>.Step
        do {
            let address = try await joiner.join(credentials)
            guard var run = improv else { return }
            let redirect = run.config.redirectURL.map { url in url.replacing("{address}", with: address ?? "") }
            step = run.session.joined(redirect: redirect)
            improv = run
            post.yield(.due(.withdrawal, clock.now.advanced(by: Self.withdrawDelay)))
            logger.notice("improv: joined \(credentials)\(address.map { " as \($0)" } ?? "")")
        } catch {
            guard var run = improv else { return }
            run.session.failedToJoin(at: clock.now)
            improv = run
            logger.warning("improv: could not join \(credentials): \(error)")
            if let until = run.session.authorizedUntil { post.yield(.due(.authorization, until)) }
            step = .none
        }
        await show(step)
    }

    // MARK: Offered while the Wi-Fi is not connected

    /// A look at the Wi-Fi (the first at start, or when a reload adds `[improv]`): returns
    /// whether Improv is to be offered, which it is only while the Wi-Fi is not connected; the
    /// changes are followed from then on. A joiner that cannot tell (a program) has it offered;
    /// one that could not be asked is asked again (`attempt`, Improv offered meanwhile).
    @discardableResult
    func look(attempt: Int = 1) async -> Bool {
        guard let config = improv?.config else { return false }
        if let wifi { return !wifi.connected }
        let watch: WifiWatch?
        do {
            watch = try await joiners(config).wifi()
        } catch {
            guard attempt < Self.lookAttempts else {
                logger.warning("improv: offered whether or not the Wi-Fi is connected, which could not be told: \(error)")
                return true
            }
            if attempt == 1 {
                logger.warning("improv: offered until it can be told whether the Wi-Fi is connected (asked again every \(Self.lookInterval.components.seconds) s for 2 min): \(error)")
            }
            post.yield(.due(.look(attempt: attempt + 1), clock.now.advanced(by: Self.lookInterval)))
            return true
        }
        guard let watch else { return true }
        post.yield(.follow(watch.changes))
        guard attempt == 1 else {
            // On air since the start: the Wi-Fi told late takes it off, as a change would.
            await wifiChanged(connected: watch.connected)
            return !watch.connected
        }
        wifi = (watch.connected, clock.now)
        if watch.connected { logger.notice("improv: not offered: this machine's Wi-Fi is connected") }
        return !watch.connected
    }

    /// Puts Improv on air, with a fresh service when a new session starts.
    func putOnAir(fresh: ConfiguredService? = nil) async {
        improv?.offered = true
        await display?.offer(ImprovConfig.name, withheld: nil, fresh: fresh)
    }

    /// The Wi-Fi connected, or is no longer: Improv leaves the air at once (not while its own
    /// join is under way or its result is being read: ``withdrawDelay`` does it then), or is
    /// offered again once the Wi-Fi has stayed disconnected for ``offerDelay``.
    func wifiChanged(connected: Bool) async {
        guard wifi?.connected != connected else { return }
        wifi = (connected, clock.now)
        guard let run = improv else { return }
        if connected {
            logger.info("improv: this machine's Wi-Fi connected")
            guard run.offered, run.session.state != .provisioning, run.session.state != .provisioned else { return }
            await withdraw(because: "this machine's Wi-Fi is connected")
        } else if run.offered {
            logger.info("improv: this machine's Wi-Fi is not connected")
        } else {
            post.yield(.due(.offer, clock.now.advanced(by: Self.offerDelay)))
            logger.notice("improv: this machine's Wi-Fi is not connected; Improv is offered in \(Self.offerDelay.components.seconds) s unless it connects again")
        }
    }

    /// Offers Improv again, with a new session, if the Wi-Fi stayed disconnected.
    func offerDue() async {
        guard let run = improv, !run.offered, let wifi, !wifi.connected,
              clock.now >= wifi.since.advanced(by: Self.offerDelay) else { return }
        improv = ImprovRun(run.config)
        await putOnAir(fresh: run.config.service(state: run.config.firstState, error: .none))
        logger.notice("improv: offered: the Wi-Fi has not been connected for \(Self.offerDelay.components.seconds) s")
        await show()
    }

    /// Takes Improv off the air once its result had time to be read.
    func withdrawalDue() async {
        guard let run = improv, run.offered, run.session.state == .provisioned else { return }
        await withdraw(because: "the device was provisioned \(Self.withdrawDelay.components.seconds) s ago")
    }

    /// Takes Improv's advertisement and service off the air.
    func withdraw(because reason: String) async {
        improv?.offered = false
        await display?.offer(ImprovConfig.name, withheld: Self.notOffered, fresh: nil)
        logger.notice("improv: no longer offered: \(reason)")
        if let wifi, !wifi.connected { post.yield(.due(.offer, clock.now.advanced(by: Self.offerDelay))) }
    }

    static func errorText(_ error: Improv.ErrorState) -> String {
        switch error {
        case .none: "no error"
        case .invalidRPC: "a malformed frame (invalid RPC)"
        case .unknownRPC: "a command this device does not offer (unknown RPC)"
        // From a frame (a join that fails is said on its own): a password no WPA network takes.
        case .unableToConnect: "unable to connect: the password is none a WPA network takes (8 to 63 printable ASCII characters or 64 hex digits); refused before any join"
        case .notAuthorized: "not authorized: bleadvctl improv authorize allows provisioning"
        case .badHostname: "a bad hostname"
        case .unknown: "refused (a join is under way)"
        }
    }
}
