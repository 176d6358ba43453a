import Logging
public import Peripheral

/// BlueZ's events, reconciled with the registrations, and the links that take advertising off air.
extension BluetoothModule {
    // MARK: Events

    /// Reconciles after something happened below. A central's write is kept at once, without
    /// waiting for the turn with BlueZ: it is only the value to register again.
    public func handle(_ event: PeripheralEvent) async {
        if case .gatt(let gatt) = event, case .written(let bytes, _) = gatt.kind {
            logger.debug("event: \(event)")
            // Checked and taken below: the value in force now, and the one registered again
            // after bluetoothd restarts.
            changeApplication { $0[gatt.characteristic]?.value = bytes }
            return
        }
        try? await exclusively {
            switch event {
            // A central in radio range decides how often these come.
            case .gatt, .paired, .bondEnded, .connected, .disconnected: logger.debug("event: \(event)")
            case .pairable(let adapter, true):
                // bleadvd owns Pairable while its agent is registered: on outside a window
                // (another program's, any local user may by BlueZ's policy) is put back.
                guard !pairable, case .on(_, adapter)? = registrations[.agent]?.status.phase else { return }
                logger.warning("\(adapter) was made pairable outside a bleadvd pairing window, by another program (BlueZ does not say which: bluetoothctl pairable on, say); made not pairable again, and bleadvd's agent the default again")
                do {
                    try await manager.setPairable(false, adapter: adapter)
                } catch {
                    logger.error("\(adapter) could not be made not pairable again: \(error)")
                }
            case .pairable:
                break
            case .released:
                logger.info("event: \(event)")
                scheduleAudit()
            case .bluezVanished, .bluezAppeared, .adapterAdded, .adapterRemoved, .adapterPowered:
                logger.info("event: \(event)")
                scheduleAudit()
            }
            switch event {
            case .bluezVanished(let generation):
                linksEnded(on: nil)
                let wasCurrent = stack.vanished(generation)
                registrations.lost(to: generation, onAdapter: nil, waitAll: wasCurrent, at: clock.now)
            case .bluezAppeared(let generation):
                stack.appeared(generation)
                await reconcile()
            case .adapterAdded(let adapter, _):
                stack.changed()
                guard configuredAdapter?.mayBe(adapter) ?? true else { return }
                await moveToEarlier(adapter)
                await reconcile()
            case .adapterRemoved(let adapter, let generation):
                stack.changed()
                linksEnded(on: adapter)
                // They wait for it, even when another adapter remains: bluetoothd removes every
                // adapter when it stops, and registering on another then races its shutdown
                // (the controller can be left with instances nobody holds; seen in the test bed).
                registrations.lost(to: generation, onAdapter: adapter, waitAll: false, at: clock.now)
            case .adapterPowered(let adapter, true, _):
                stack.powered(adapter, true, settleUntil: clock.now)
                guard configuredAdapter?.mayBe(adapter) ?? true else { return }
                await reconcile()
            case .adapterPowered(let adapter, false, let generation):
                linksEnded(on: adapter)
                stack.powered(adapter, false, settleUntil: clock.now.advanced(by: Self.powerOffSettle))
                // Advertisements leave the air with the power; BlueZ keeps the GATT application.
                for key in registrations.keys {
                    guard key.kind == .advertisement, case .on(let id, adapter)? = registrations[key]?.status.phase,
                          id.generation == generation else { continue }
                    await takeOff(key)
                }
                // They wait, saying why; once the adapter settled (retryDue), it is powered on
                // again (power_on = true) and they are registered again, or the status says why not.
                await reconcile()
            case .connected(let central, let adapter):
                guard links[adapter, default: []].insert(central).inserted, relinkAt[adapter] == nil else { return }
                let settled = clock.now.advanced(by: Self.linkSettle)
                relinkAt[adapter] = lastRelink[adapter].map { max(settled, $0.advanced(by: Self.relinkSpacing)) } ?? settled
            case .disconnected(let central, let adapter):
                guard links[adapter]?.remove(central) != nil else { return }
                rotationRestartAt[adapter] = clock.now.advanced(by: Self.rotationRestartDelay)
                guard links[adapter]!.isEmpty else { return }
                links[adapter] = nil
                relinkAt[adapter] = nil
                await lastLinkEnded(on: adapter)
            case .paired, .bondEnded, .gatt, .pairable:
                break  // a write is kept above; what else centrals do changes nothing here
            case .released(let id):
                guard let key = registrations.key(of: id) else { return }
                if case .advertisement(let advertisement)? = registrations[key]?.subject, advertisement.timeout != nil {
                    logger.info("\(key): its timeout ran out; it is off now")
                    registrations[key]!.status.desired = false
                    move(key, to: .off)
                    await slotFreed()
                } else {
                    logger.notice("\(key): BlueZ released it; registering it again")
                    move(key, to: .waiting)
                    await attempt(key)
                }
            }
        }
    }

    // MARK: Links

    /// Links on `adapter` have settled (``linkSettle``). On a controller with extended
    /// advertising each link ended the advertising set it came from, and the kernel enables that
    /// set again only when the link ends; so every advertisement on air there is registered
    /// again, which the kernel enables beside the links where the controller's LE states allow.
    /// One the stack refuses is paused until the adapter's last central has left
    /// (``pauseBesideLinks(_:on:_:)``). Without
    /// extended advertising the kernel enables advertising again by itself: nothing to do.
    func linkSettled(on adapter: String) async {
        let onAir = advertisementsOnAir(on: adapter)
        guard let centrals = links[adapter], !centrals.isEmpty, !onAir.isEmpty,
              let capabilities = try? await capabilities(of: adapter), !capabilities.secondaryChannels.isEmpty else { return }
        let said = centrals.count == 1 ? ("a link", "it") : ("\(centrals.count) links", "them")
        logger.notice("\(said.0) on \(adapter) took advertising there off air: registering \(onAir.map(\.description).joined(separator: ", ")) again beside \(said.1)")
        for key in onAir {
            await takeOff(key)
            await attempt(key)  // refused beside the link: paused (pauseBesideLinks)
        }
    }

    /// A link on `adapter` ended (``rotationRestartDelay`` ago). Without extended advertising
    /// the kernel shows the adapter's advertisements in turn, 2 s each, from a timer, and a link
    /// that ends as a turn ends can leave that timer unarmed: when the timer fires, the kernel
    /// notes the advertisement whose turn ends and queues the work that ends it; the disconnect,
    /// handled meanwhile, makes the link's own advertisement the current one; the work then finds
    /// that the one it was to end is not current, and neither ends a turn nor arms the timer
    /// (net/bluetooth/hci_sync.c, `adv_timeout_expire` and `hci_clear_adv_instance_sync`, in
    /// Linux 6.1 to 6.12 at least). The turns stop, on whichever advertisement was on air, until
    /// something is registered or changed: a BTHome sensor beside a connectable advertisement
    /// can stay off air for good. One of the module's advertisements there, sent again
    /// unchanged, arms the timer again; when the turns had not stopped, that changes nothing, or
    /// restarts the turn of the one on air. (Checked like an in-place update: BlueZ 5.66 to
    /// 5.73 drop an advertisement whose refresh the kernel refuses.)
    func restartRotation(on adapter: String) async {
        let onAir = advertisementsOnAir(on: adapter)
        guard onAir.count > 1, case .on(let id, _)? = registrations[onAir[0]]?.status.phase,
              let capabilities = try? await capabilities(of: adapter), capabilities.secondaryChannels.isEmpty else { return }
        do {
            try await manager.refreshAdvertisement(id)
            registrations[onAir[0]]?.checkAt = clock.now.advanced(by: Self.updateCheckDelay)
            logger.debug("a link on \(adapter) ended: \(onAir[0]) sent again, so that the kernel's turns among the advertisements there go on")
        } catch {
            logger.notice("a link on \(adapter) ended, and sending \(onAir[0]) again (so that the kernel's turns among the advertisements there go on) failed: \(error)")
        }
    }

    /// The advertisements on air on `adapter`, in the order of their keys.
    func advertisementsOnAir(on adapter: String) -> [Key] {
        registrations.advertisementsOnAir(on: adapter)
    }

    /// The last link on `adapter` ended: what it paused is registered again.
    func lastLinkEnded(on adapter: String) async {
        for key in registrations.paused(on: adapter) {
            // An attempt before may have moved it on.
            guard case .paused(adapter)? = registrations[key]?.status.phase else { continue }
            logger.notice("\(key): the last central on \(adapter) left; registering it again")
            move(key, to: .waiting)
            await attempt(key)
        }
    }

    /// The links on `adapter` (every adapter when nil) ended with it, or with bluetoothd: what
    /// they paused waits for the adapter, as everything else there does.
    func linksEnded(on adapter: String?) {
        if let adapter {
            links[adapter] = nil; relinkAt[adapter] = nil; rotationRestartAt[adapter] = nil
        } else {
            links = [:]; relinkAt = [:]; rotationRestartAt = [:]
        }
        for key in registrations.paused(on: adapter) { move(key, to: .waiting) }
    }
}
