import Logging
import Peripheral

/// The audit: what the stack holds against what the module registered, and the repairs.
extension BluetoothModule {
    // MARK: The audit

    /// Runs the audit if its time (``nextAudit``) has come. The module's timer calls it after
    /// ``retryDue()``; a test may call it after advancing a manual clock.
    public func auditDue() async {
        try? await exclusively {
            guard let at = audits.due, at <= clock.now else { return }
            audits.due = nil
            await audit()
        }
    }

    /// What the last audit found and could not repair, by adapter: BlueZ holds more
    /// advertisements there than bleadvd registered (another program's, or a registration of
    /// bleadvd's it cannot name). Empty when all agrees.
    public func discrepancies() -> [String: String] {
        audits.found
    }

    /// Compares what the stack holds with what is on air, adapter by adapter, and repairs what
    /// it can: an advertisement believed on air that the manager no longer holds is registered
    /// again, a registration no advertisement tracks is unregistered, and when the stack counts
    /// fewer than are held each is confirmed (registered again if it was dropped).
    func audit() async {
        if stack.bluez == .absent { return }
        auditing = true
        let held: [RegistrationAudit]
        do {
            held = try await manager.audit()
        } catch {
            logger.debug("audit: could not ask the stack: \(error)")
            return
        }
        var repaired = false
        var unexplained: [String: String] = [:]
        for audit in held {
            let onAir = advertisementsOnAir(on: audit.adapter).compactMap { key in
                registrations[key]?.status.phase.id.map { (key: key, id: $0) }
            }
            if audit.straysRemoved > 0 {
                logger.warning("audit: \(audit.adapter): unregistered \(audit.straysRemoved) registration(s) of bleadvd's that nothing tracked")
                repaired = true
            }
            for (key, id) in onAir where !audit.held.contains(id) {
                // One turned off whose unregistering BlueZ did not answer in time (stuck, and
                // done once it came back) is where it was asked to be.
                guard registrations[key]?.status.desired == true else {
                    logger.notice("audit: \(key) is no longer registered on \(audit.adapter), as it was asked to be: off air")
                    move(key, to: .off)
                    continue
                }
                logger.warning("audit: \(key) was on air on \(audit.adapter) as far as bleadvd knew, but is not registered; registering it again")
                move(key, to: .waiting)
                await attempt(key)
                repaired = true
            }
            for id in audit.held.subtracting(onAir.map(\.id)).sorted(by: { $0.rawValue < $1.rawValue }) {
                logger.warning("audit: \(id) is registered on \(audit.adapter) but no advertisement tracks it; unregistering it")
                try? await manager.unregister(id)
                repaired = true
            }
            if audit.registered < audit.held.count {
                logger.warning("audit: BlueZ counts \(audit.registered) advertisement(s) on \(audit.adapter) for bleadvd's \(audit.held.count); confirming each")
                for (key, id) in onAir where audit.held.contains(id) { await confirm(key) }
                repaired = true
            }
            if audit.registered > audit.held.count {
                unexplained[audit.adapter] = "BlueZ holds \(audit.registered) advertisement(s) on \(audit.adapter), bleadvd \(audit.held.count): \(audit.registered - audit.held.count) registered by another program, or by bleadvd where it cannot name them"
            }
        }
        if repaired {
            // Counted again once the repairs settled; a difference that keeps coming back is
            // reported rather than fought.
            if audits.repaired(limit: Self.maximumRepairingAudits) {
                scheduleAudit()
                return
            }
            logger.error("audit: what BlueZ holds still differs after \(Self.maximumRepairingAudits) repairs; not repairing again until something changes")
        }
        let (new, gone) = audits.settled(unexplained)
        for finding in new { logger.warning("audit: \(finding.text)") }
        for adapter in gone { logger.notice("audit: \(adapter): what BlueZ holds agrees with bleadvd again") }
        for key in registrations.keys {
            guard key.kind == .advertisement, case .on(_, let adapter)? = registrations[key]?.status.phase else { continue }
            registrations[key]?.status.mismatch = audits.found[adapter]
        }
    }

    /// Registers `key` again if BlueZ dropped it after an in-place update without saying so.
    func confirm(_ key: Key) async {
        guard case .on(let id, _)? = registrations[key]?.status.phase else { return }
        do {
            if try await manager.reregisterIfDropped(id) {
                logger.warning("\(key): BlueZ had dropped it after an in-place update without a word (as BlueZ 5.66 to 5.73 do when the kernel refuses the update); registered it again")
            }
        } catch {
            logger.warning("\(key): BlueZ no longer holds it and registering it again failed (\(error)); trying anew")
            await takeOff(key)
            await attempt(key)
        }
    }
}
