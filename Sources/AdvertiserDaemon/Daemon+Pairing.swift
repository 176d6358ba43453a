import AdvertiserControl
import AdvertiserConfig
import BluetoothModule
import DBus
import Logging
package import Peripheral

/// The agent's decider: the daemon's pairing window, held weakly (the module keeps the decider
/// for as long as the agent is registered, and the daemon keeps the module).
struct PairingAgent<C: Clock>: PairingDecider where C.Duration == Duration {
    weak let daemon: Daemon<C>?

    func decide(_ request: PairingRequest) async -> Bool {
        await daemon?.decide(request) ?? false
    }

    func cancel() async {
        await daemon?.cancelConfirmations()
    }
}

extension Daemon {
    /// How long a central that was let in has to finish pairing before it counts as failed.
    package static var pairingTimeout: Duration { .seconds(30) }

    /// The method the agent is registered for: the config's, when a characteristic asks for a
    /// bond (its `security` is not none). An agent makes the adapter unpairable outside its
    /// windows, which a desktop's own pairing (headphones, a keyboard) would run into: a
    /// config whose services are all open (Improv's alone, say) registers none.
    var agentMethod: PairingMethod? {
        let bondNeeded = services.values.contains { $0.live.service.characteristics.contains { $0.security != .none } }
        return bondNeeded ? pairing.method : nil
    }

    /// Has the module keep the agent registered for `method` (nil: none), with this daemon's
    /// window deciding its requests.
    func offerPairing(_ method: PairingMethod?) async {
        await module.offerPairing(method, decider: PairingAgent(daemon: self))
    }

    // MARK: Control API

    package func pair(for seconds: Int?, by caller: String) async throws(PeripheralError) -> (method: PairingMethod, seconds: Int) {
        guard let method = agentMethod else {
            throw PeripheralError(.invalid, pairing.method == nil
                ? "pairing is off ([pairing] method = \"off\" in \(configPath))"
                : "no characteristic in \(configPath) asks for a bond (security is none for each): there is nothing to pair for")
        }
        let length = seconds ?? Int(pairing.window.components.seconds)
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
        window.open(until: clock.now.advanced(by: .seconds(length)), attempts: pairing.attempts, method: method, opener: caller)
        logger.notice("pairing: window open for \(length) s (\(method.rawValue), up to \(pairing.attempts) attempt(s))")
        await announce("opened")
        schedulePairingTimer()
        return (method, length)
    }

    package func confirm(_ central: String, matches: Bool, by caller: String) async throws(PeripheralError) {
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

    package func bonds() async throws(PeripheralError) -> [Bond] {
        try await Self.typed { [module] in try await module.bonds() }
    }

    package func forget(_ central: String, any: Bool) async throws(PeripheralError) {
        guard Bond.isAddress(central) else {
            throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(central)) is not a Bluetooth address (expected e.g. AA:BB:CC:DD:EE:FF)")
        }
        let address = central.uppercased()
        if !any {
            let made: Bool
            do {
                made = try bondRecord?.centrals().contains(address) ?? false
            } catch {
                throw PeripheralError(.failed, "\(error.message); bleadvctl forget --any \(address) removes the bond all the same")
            }
            if !made {
                guard try await bonds().contains(where: { $0.central == address }) else {
                    throw PeripheralError(.unknownName, "no central \(address) is bonded with the adapter")
                }
                logger.warning("pairing: forget \(address) refused: it did not bond in a bleadvd pairing window")
                throw PeripheralError(.accessDenied, "\(address) did not bond in a bleadvd pairing window (a desktop's own pairing made it, say), so bleadvd leaves it; bleadvctl forget --any \(address) removes it all the same")
            }
        }
        do {
            try await Self.typed { [module] in try await module.forget(address) }
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
            schedulePairingTimer()
        }
        switch request.kind {
        case .authorize:
            logger.notice("pairing: \(central) asks to pair (just works); let in")
            await announce("requested", central: request.central)
            return true
        case .passkey:
            logger.notice("pairing: \(central) asks to pair; type the passkey \(request.code!) on it")
            await announce("requested", central: request.central, detail: request.code!)
            return true
        case .confirm:
            logger.notice("pairing: \(central) asks to pair; does it show \(request.code!)? answer with bleadvctl pair")
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

    // MARK: The window's time

    /// Asks the loop for a timer at the window's next due instant, unless one is set for it.
    func schedulePairingTimer() {
        guard let due = window.nextDue(timeout: Self.pairingTimeout), pairingAlarm.arm(due) else { return }
        post.yield(.pairingDue(due))
    }

    /// The timer at `at` fired: requests that got no bond in time failed; a window whose time
    /// ran out closes.
    func pairingTimerFired(_ at: C.Instant) async {
        pairingAlarm.fired(at)
        let now = clock.now
        for central in window.expire(at: now, timeout: Self.pairingTimeout) {
            await failed(central, because: "no bond within \(Self.pairingTimeout.components.seconds) s: a wrong code, or it gave up")
        }
        if let until = window.until, until <= now { await closeWindow(because: "its time ran out") }
        schedulePairingTimer()
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

    /// Tells whoever opened the window what happened in it; no one else is told (the journal
    /// keeps the rest, without codes).
    func announce(_ event: String, central: String = "", detail: String = "") async {
        guard let opener = window.opener else { return }
        await ControlService.pairing(event, central: central, detail: detail, to: opener, on: connection)
    }
}
