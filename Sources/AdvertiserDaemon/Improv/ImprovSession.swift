import AdvertiserConfig
import Peripheral

/// Improv's state machine as a value apart from its effects: what the device's state and error
/// are, until when a person's authorization holds, and what each command a client sends asks
/// the daemon to do (answer, identify, join a network). The daemon carries out the
/// ``Step``s it returns and reports back how a join ended.
struct ImprovSession<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    /// What the daemon is to do for a command, beyond showing the new state and error.
    enum Step: Hashable, Sendable {
        /// Notify this result frame.
        case result([UInt8])
        /// Identify the device (run the configured command).
        case identify
        /// List the Wi-Fi networks in range, and report with ``scanned(_:)``.
        case scan
        /// Join this network, and report with ``joined(redirect:)`` or ``failedToJoin(at:)``.
        case join(Improv.Credentials)
        /// Nothing more (the state or error says it all).
        case none
        /// A frame from a central other than the one authorized, taken while that one's
        /// authorization or join lasts: nothing changes, and nothing is shown (what centrals
        /// read and are notified of is shared: the owner's client would take a stranger's
        /// error for its own).
        case ignored
    }

    /// The state centrals read and are notified of.
    private(set) var state: Improv.State
    /// The last error.
    private(set) var error: Improv.ErrorState = .none
    /// Until when a person's authorization holds; nil when none is needed or none was given.
    private(set) var authorizedUntil: Instant?
    /// The central a person authorized (its address), from the authorization until it runs out,
    /// is used up, or the join it allowed ends: the one central whose frames are taken then.
    private(set) var authorizedCentral: String?
    /// Whether the authorized central's link ended while the join it started runs: the join
    /// goes on, and its failure gives no authorization back.
    private(set) var authorizedLinkEnded = false
    /// The joins that failed since the last authorization (the authorized central's: no other
    /// central's frame starts one).
    private(set) var failedJoins = 0
    /// How many failed joins one authorization allows: then a person must authorize again, so
    /// that a client cannot use one authorization to try password after password.
    static var failedJoinsPerAuthorization: Int { 3 }
    /// Whether authorization is needed and for how long it holds, what the device offers.
    let config: ImprovConfig
    /// The strings the device info command answers with.
    let deviceInfo: [String]

    /// A session of `config` in its first state, answering device info with `deviceInfo`.
    init(_ config: ImprovConfig, deviceInfo: [String]) {
        self.config = config
        self.deviceInfo = deviceInfo
        state = config.firstState
    }

    /// A person allowed `central` (an address) to provision at `now` (`bleadvctl improv
    /// authorize`): until the authorization ends, every other central's frames are ignored.
    mutating func authorize(_ central: String, at now: Instant) {
        guard config.needsAuthorization, state == .authorizationRequired || state == .authorized else { return }
        state = .authorized
        error = .none
        authorizedUntil = now.advanced(by: config.authorization)
        authorizedCentral = central
        authorizedLinkEnded = false
        failedJoins = 0
    }

    /// `central`'s link ended: an authorization of it ends with it (true), so that a central
    /// that connects next with its address, which went over the air in the clear, finds none,
    /// and a reconnect needs a person's new authorization. A join it started goes on (its frames
    /// stay the only ones taken meanwhile), and a failure of that join gives no authorization
    /// back (true too). False when no authorization of `central` holds.
    mutating func linkEnded(_ central: String) -> Bool {
        guard let authorizedCentral, authorizedCentral == central else { return false }
        switch state {
        case .authorized:
            state = .authorizationRequired
            authorizedUntil = nil
            self.authorizedCentral = nil
            return true
        case .provisioning:
            authorizedLinkEnded = true
            return true
        default:
            return false
        }
    }

    /// The session a reload that changed `[improv]` goes on with: a join under way (or its
    /// result) stays, so that no second join starts beside it; a person's authorization holds
    /// until its time when the new config still asks for one; otherwise the new config's first
    /// state.
    func reconfigured(_ config: ImprovConfig, deviceInfo: [String]) -> ImprovSession {
        var next = ImprovSession(config, deviceInfo: deviceInfo)
        switch state {
        case .provisioning, .provisioned:
            next.state = state
            next.error = error
            next.authorizedCentral = authorizedCentral
            next.authorizedLinkEnded = authorizedLinkEnded
        case .authorized where config.needsAuthorization && authorizedUntil != nil:
            next.state = .authorized
            next.authorizedUntil = authorizedUntil
            next.authorizedCentral = authorizedCentral
            next.failedJoins = failedJoins
        default:
            break
        }
        return next
    }

    /// The authorization ran out at `now`: true when the state went back to requiring one.
    mutating func expire(at now: Instant) -> Bool {
        guard state == .authorized, let until = authorizedUntil, until <= now else { return false }
        state = .authorizationRequired
        authorizedUntil = nil
        authorizedCentral = nil
        return true
    }

    /// What to do with `frame`, written by `central` at `now`. While a person's authorization
    /// of another central lasts (authorized, or joining the network it sent), nothing: the
    /// frame is ignored.
    mutating func handle(_ frame: [UInt8], from central: String, at now: Instant) -> Step {
        if let authorizedCentral, central != authorizedCentral, state == .authorized || state == .provisioning {
            return .ignored
        }
        switch Improv.command(from: frame) {
        case .failure(let failure):
            error = failure
            return .none
        case .success(let command):
            return handle(command, at: now)
        }
    }

    private mutating func handle(_ command: Improv.Command, at now: Instant) -> Step {
        switch command {
        case .identify where config.capabilities.contains(.identify):
            error = .none
            return .identify
        case .deviceInfo where config.capabilities.contains(.deviceInfo):
            error = .none
            return Improv.result(of: command.id, deviceInfo).map(Step.result) ?? fail(.unknown)
        case .scan where config.capabilities.contains(.scan):
            error = .none
            return .scan
        case .wifi(let credentials):
            guard state != .provisioning else { return fail(.unknown) }
            guard authorized(at: now) else { return fail(.notAuthorized) }
            state = .provisioning
            error = .none
            return .join(credentials)
        default:
            return fail(.unknownRPC)
        }
    }

    /// The network was joined: provisioned, and the result carries `redirect` (none when nil).
    mutating func joined(redirect: String?) -> Step {
        state = .provisioned
        error = .none
        authorizedUntil = nil
        authorizedCentral = nil
        // A redirect too long for a frame (the config bounds it; the address filled in may not
        // fit) is left out rather than the result.
        return .result(Improv.result(of: 0x01, redirect.map { [$0] } ?? []) ?? Improv.result(of: 0x01, [])!)
    }

    /// The networks in range were listed: the result names them (none when the scan failed).
    func scanned(_ networks: [Improv.Network]) -> Step {
        .result(Improv.scanResult(networks))
    }

    /// Joining failed at `now`: unable to connect, ready for credentials again (an
    /// authorization's time starts over, as the spec asks) — unless it was the last failed
    /// join the authorization allows (``failedJoinsPerAuthorization``), or the authorized
    /// central's link ended meanwhile (``linkEnded(_:)``): then a person must authorize again.
    mutating func failedToJoin(at now: Instant) {
        error = .unableToConnect
        failedJoins += 1
        guard config.needsAuthorization else {
            state = .authorized
            return
        }
        if failedJoins >= Self.failedJoinsPerAuthorization || authorizedLinkEnded {
            state = .authorizationRequired
            authorizedUntil = nil
            authorizedCentral = nil
        } else {
            state = .authorized
            authorizedUntil = now.advanced(by: config.authorization)
        }
    }

    /// Whether credentials may be taken at `now`.
    private func authorized(at now: Instant) -> Bool {
        guard state == .authorized else { return false }
        return authorizedUntil.map { now < $0 } ?? !config.needsAuthorization
    }

    private mutating func fail(_ failure: Improv.ErrorState) -> Step {
        error = failure
        return .none
    }
}
