import Logging
import Peripheral

/// Registering and unregistering: attempts, failures sorted, the adapter in use.
extension BluetoothModule {
    // MARK: Doing it

    /// One of our advertisements left its slot: those waiting for a free slot are tried now, in
    /// name order, rather than at their next retry (which still comes, for a slot that another
    /// program frees).
    func slotFreed() async {
        for key in registrations.waitingForSlot where registrations.waitingForSlot.contains(key) {
            await attempt(key)
        }
    }

    /// With no adapter configured, registrations belong on the first adapter that can
    /// advertise, by name. When `adapter` comes and sorts before the one they are on (after
    /// bluetoothd restarts, whichever adapter's advertising manager comes first is taken), they
    /// move to it, so where they end up does not depend on that race.
    func moveToEarlier(_ adapter: String) async {
        guard configuredAdapter == nil else { return }
        for key in registrations.keys {
            guard case .on(_, let on)? = registrations[key]?.status.phase, adapter < on else { continue }
            logger.notice("\(key): moving from \(on) to \(adapter), the first adapter that can advertise")
            await takeOff(key)
        }
    }

    /// Tries what should be registered and waits for BlueZ or an adapter, or for its retry.
    func reconcile() async {
        // Each as it is when its turn comes: an attempt before may have changed it.
        for key in registrations.due where registrations.due.contains(key) {
            await attempt(key)
        }
    }

    /// Tries to register `key` once and records what happened: registered, or why not (a retry
    /// scheduled for a transient failure). Only the call itself differs by kind. Returns the
    /// failure, if any.
    @discardableResult
    func attempt(_ key: Key) async -> PeripheralError? {
        guard let subject = registrations[key]?.subject else { return nil }
        if let name = key.advertisement, held.contains(name) {
            // Its turn has not come: it waits, and no retry or event registers it meanwhile.
            registrations[key]?.status.lastError = nil
            move(key, to: .waiting)
            return nil
        }
        var target: AdapterCapabilities?
        do {
            let adapter = try await resolveAdapter()
            target = adapter
            var sent = subject
            var ignored: [String] = []
            if case .advertisement(let advertisement) = subject {
                try advertisement.validate(for: adapter)
                sent = .advertisement(try sealed(advertisement, for: adapter))
                ignored = advertisement.fieldsIgnored(on: adapter)
            }
            let id = try await manager.register(sent, on: adapter.name)
            switch subject {
            case .advertisement:
                logger.info("\(key): on air on \(adapter.name) as \(id)")
            case .application(let application):
                logger.info("GATT: \(application.services.count) service(s) registered on \(adapter.name) as \(id)")
            case .agent(let method, _):
                logger.info("pairing: agent registered for \(method.rawValue) as \(id)")
                await sendPairable(on: adapter.name)
            }
            registrations[key]?.status.lastError = nil
            registrations[key]?.status.ignored = ignored
            registrations[key]?.status.adapterAddress = adapter.address
            move(key, to: .on(id, adapter: adapter.name))
            if !ignored.isEmpty {
                logger.warning("\(key): bluetoothd ignores \(ignored.joined(separator: ", ")): BlueZ before 5.77 acts on them only when bluetoothd runs with --experimental (-E)")
            }
            return nil
        } catch {
            let failure = Self.peripheralError(error)
            if let target, pauseBesideLinks(key, on: target, failure) { return failure }
            recordFailure(key, failure, notNow: error is NotNow)
            return failure
        }
    }

    /// An advertisement the stack refused while a central is connected on an adapter with
    /// extended advertising is paused until the adapter's last central has left, whenever it
    /// was tried (the link's settle, an `on`, a reload, a rotation's turn): several Broadcom and
    /// Cypress chips refuse every advertising enable while linked, and a retry every 4 s would
    /// last the link's life. Returns whether it paused it. BlueZ not answering, or no free slot,
    /// is retried as ever.
    func pauseBesideLinks(_ key: Key, on adapter: AdapterCapabilities, _ failure: PeripheralError) -> Bool {
        guard key.kind == .advertisement, failure.code == .failed, links[adapter.name]?.isEmpty == false,
              !adapter.secondaryChannels.isEmpty else { return false }
        registrations[key]?.status.lastError = failure
        move(key, to: .paused(adapter: adapter.name))
        logger.notice("\(key): paused: a central is connected on \(adapter.name), and the stack refused it beside the link (\(failure.message)); registering it again when the link ends")
        return true
    }

    /// What a registration's failure means: the manager throws `PeripheralError`, or
    /// `CancellationError` when its caller gave up on BlueZ; the stack view refuses with ``NotNow``.
    static func peripheralError(_ error: any Error) -> PeripheralError {
        (error as? NotNow)?.reason ?? error as? PeripheralError
            ?? (error is CancellationError ? PeripheralError(.timeout, "gave up waiting for BlueZ") : PeripheralError(.unknown, "\(error)"))
    }

    /// The stack view says a registration may not be tried now: it waits for the event (or the
    /// end of an adapter's settling) that changes that.
    struct NotNow: Error {
        let reason: PeripheralError
    }

    /// Records a failed registration and what comes after it, for every kind alike: waiting
    /// for BlueZ or an adapter (an event brings it back), a retry with backoff for a transient
    /// failure, or nothing until it is changed.
    func recordFailure(_ key: Key, _ error: PeripheralError, notNow: Bool) {
        let slot = error.code == .noFreeInstance
        let after = registrations.fail(key, error, notNow: notNow, at: clock.now) { [retry] in
            retry.delay(afterFailures: $0, waitingForSlot: slot)
        }
        switch after {
        case nil:
            break
        case .waiting(let adapterGone)?:
            if adapterGone { stack.changed() }
            logger.notice("\(key): waiting: \(error.message)")
        case .retrying(_, let delay)?:
            // Every try at first; then every 15th: once a minute at the 4 s cap (every 15 minutes
            // at a slot's 60 s).
            let failures = registrations[key]?.status.phase.failures ?? 1
            if failures <= 3 || failures % 15 == 0 {
                let lasting = failures > 3 ? " (try \(failures); said every 15th try while it lasts)" : ""
                logger.warning("\(key): \(error.message); retrying in \(delay)\(lasting)")
            } else {
                logger.debug("\(key): \(error.message); retrying in \(delay) (try \(failures))")
            }
        case .failed?:
            let until = if key == .application { "the config changes" } else { "it is turned on again" }
            logger.error("\(key): \(error.message); not retrying until \(until)")
        }
    }

    /// `advertisement` as it goes to BlueZ on `adapter`: an encrypted BTHome sealed for the
    /// adapter's address with the next counter for its key.
    func sealed(_ advertisement: Advertisement, for adapter: AdapterCapabilities) throws(PeripheralError) -> Advertisement {
        guard let key = advertisement.bthomeKey else { return advertisement }
        guard let address = adapter.address.flatMap(BTHome.addressBytes) else {
            throw PeripheralError(.failed, "BlueZ did not report \(adapter.name)'s address, which encrypted BTHome needs")
        }
        guard let counters else { throw PeripheralError(.invalid, "encrypted BTHome needs a counter store") }
        return advertisement.sealed(address: address, counter: try counters.next(for: key))
    }

    /// What adapter `name` can do: the one in use, or as BlueZ reports it now.
    func capabilities(of name: String) async throws -> AdapterCapabilities {
        if let adapterInUse = stack.adapterInUse, adapterInUse.name == name { return adapterInUse }
        guard let adapter = try await manager.adapters().first(where: { $0.name == name }) else {
            throw PeripheralError(.noAdapter, "adapter \(name) is not present")
        }
        return adapter
    }

    /// The adapter to register on, powered on if it may be; throws ``NotNow`` when the stack
    /// view says nothing may be tried now.
    func resolveAdapter() async throws -> AdapterCapabilities {
        if let refusal = stack.refusal(on: stack.adapterInUse?.name ?? configuredAdapter?.name) { throw NotNow(reason: refusal) }
        if let adapterInUse = stack.adapterInUse { return adapterInUse }
        let adapters = try await manager.adapters()
        let chosen = configuredAdapter.flatMap { choice in adapters.first(where: choice.matches) }
            ?? (configuredAdapter == nil ? adapters.first : nil)
        guard let adapter = chosen else {
            throw PeripheralError(.noAdapter, configuredAdapter.map { "adapter \($0) is not present or cannot advertise" }
                ?? "no adapter that can advertise")
        }
        if let refusal = stack.refusal(on: adapter.name) { throw NotNow(reason: refusal) }
        if !adapter.powered {
            guard powerOnAllowed else {
                throw PeripheralError(.notPowered, "adapter \(adapter.name) is powered off and power_on is false")
            }
            do {
                try await manager.powerOn(adapter: adapter.name)
            } catch let error as PeripheralError where error.code == .notPowered {
                // BlueZ is changing the adapter's power already (bluetoothd powers every adapter
                // on as it starts): its Powered event brings the registrations back, or the end
                // of the settling (the retry's backoff, for an adapter that stays busy), with no
                // warning.
                stack.changingPower(adapter.name, now: clock.now) { retry.delay(afterFailures: $0) }
                throw NotNow(reason: stack.refusal(on: adapter.name) ?? error)
            }
        }
        stack.use(adapter)
        return adapter
    }

    /// Unregisters `key` if it is registered; then it is off, or waiting when it should be on.
    func takeOffThrowing(_ key: Key) async throws {
        guard let registration = registrations[key] else { return }
        if case .on(let id, _) = registration.status.phase {
            do {
                try await manager.unregister(id)
            } catch let error as PeripheralError where error.code == .notRegistered {
                // Gone already: the goal is reached.
            }
            switch registration.subject {
            case .advertisement: logger.info("\(key): off air")
            case .application: logger.info("GATT: unregistered \(id)")
            case .agent: logger.info("pairing: agent unregistered")
            }
        }
        move(key, to: registration.status.desired ? .waiting : .off)
    }

    func takeOff(_ key: Key) async {
        do {
            try await takeOffThrowing(key)
        } catch {
            logger.warning("\(key): unregistering failed: \(error)")
            move(key, to: registrations[key]?.status.desired == true ? .waiting : .off)
        }
    }

    func move(_ key: Key, to phase: Phase) {
        registrations.move(key, to: phase, at: clock.now)
    }
}
