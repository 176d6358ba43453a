import Logging
public import Peripheral

/// The GATT application and the pairing agent, kept registered as advertisements are.
extension BluetoothModule {
    // MARK: GATT

    /// The GATT application in force (with the values set and written since); nil when none
    /// is configured. Where it is: `status()[.application]`.
    public var application: GATTApplication? {
        if case .application(let application)? = registrations[.application]?.subject { application } else { nil }
    }

    /// Changes the application in force, where one is.
    func changeApplication(_ change: (inout GATTApplication) -> Void) {
        guard var application else { return }
        change(&application)
        registrations[.application]?.subject = .application(application)
    }

    /// Sets the GATT application to keep registered; nil for none. One of the same shape as
    /// the one registered (`GATTApplication.shape`) changes its values in place, notifying
    /// subscribed centrals; any other change registers it anew.
    public func serve(_ new: GATTApplication?) async {
        try? await exclusively {
            let old = application
            if case .on(let id, _)? = registrations[.application]?.status.phase {
                if let new, let old, new.shape == old.shape {
                    registrations[.application]!.subject = .application(new)
                    for (characteristic, value) in new.characteristics where old[characteristic]?.value != value.value {
                        await send(value.value, of: characteristic, in: id)
                    }
                    return
                }
                registrations[.application]!.status.desired = false
                await takeOff(.application)
            }
            registrations[.application] = new.map {
                Registration(subject: .application($0), status: Status(desired: true, phase: .waiting, since: clock.now))
            }
            if new != nil { await attempt(.application) }
        }
    }

    /// Changes one characteristic's value; subscribed centrals are notified of it.
    /// - Throws: `PeripheralError` `unknownName` when no characteristic has that name;
    ///   `CancellationError` as for ``on(_:)``. A value BlueZ could not take is logged, and
    ///   stays the one registered next time.
    public func setValue(_ value: [UInt8], of characteristic: GATTCharacteristicID) async throws {
        try await exclusively {
            guard application?[characteristic] != nil else {
                throw PeripheralError(.unknownName, "no characteristic named \(PeripheralError.quoted(characteristic.description))")
            }
            changeApplication { $0[characteristic]!.value = value }
            if case .on(let id, _)? = registrations[.application]?.status.phase { await send(value, of: characteristic, in: id) }
        }
    }

    /// Notifies `central` alone of `value` of a characteristic; the characteristic's value stays.
    /// - Throws: `PeripheralError` `unknownName` when no characteristic has that name or the
    ///   central is not subscribed; `notRegistered` while the services are not registered;
    ///   `rejected` where BlueZ notifies every subscriber alike; `CancellationError` as for ``on(_:)``.
    public func notify(_ value: [UInt8], of characteristic: GATTCharacteristicID, to central: String) async throws {
        try await exclusively {
            guard application?[characteristic] != nil else {
                throw PeripheralError(.unknownName, "no characteristic named \(PeripheralError.quoted(characteristic.description))")
            }
            guard case .on(let id, _)? = registrations[.application]?.status.phase else {
                throw PeripheralError(.notRegistered, "the GATT services are not registered with BlueZ")
            }
            try await manager.updateValue(value, of: characteristic, in: id, to: central)
        }
    }

    func send(_ value: [UInt8], of characteristic: GATTCharacteristicID, in id: RegistrationID) async {
        do {
            try await manager.updateValue(value, of: characteristic, in: id, to: nil)
        } catch {
            logger.warning("GATT: \(characteristic) could not be changed in place: \(error)")
        }
    }

    // MARK: Pairing

    /// Sets how centrals pair (nil: no agent, so no new bonds). The agent is kept registered as
    /// the application is: again after bluetoothd comes back. A new method registers it anew.
    public func offerPairing(_ method: PairingMethod?, decider: any PairingDecider) async {
        try? await exclusively {
            if case .agent(let old, _)? = registrations[.agent]?.subject, old == method { return }
            if registrations[.agent] != nil {
                registrations[.agent]!.status.desired = false
                await takeOff(.agent)
            }
            registrations[.agent] = method.map {
                Registration(subject: .agent($0, decider: decider), status: Status(desired: true, phase: .waiting, since: clock.now))
            }
            if method != nil { await attempt(.agent) }
        }
    }

    /// Opens (true) or closes the adapter to new bonds; kept through the agent's registrations.
    /// - Throws: `PeripheralError` when BlueZ could not be told (the agent still refuses what
    ///   its decider refuses); `CancellationError` as for ``on(_:)``.
    public func setPairable(_ open: Bool) async throws {
        try await exclusively {
            pairable = open
            guard case .on(_, let adapter)? = registrations[.agent]?.status.phase else { return }
            try await manager.setPairable(open, adapter: adapter)
        }
    }

    /// The centrals bonded with the adapter in use.
    /// - Throws: `PeripheralError` when there is no adapter or BlueZ cannot be asked.
    public func bonds() async throws -> [Bond] {
        try await exclusively {
            try await manager.bonds(adapter: try await resolveAdapter().name).sorted()
        }
    }

    /// Removes the bond with `central` on the adapter in use.
    /// - Throws: `PeripheralError` `unknownName` when there is none.
    public func forget(_ central: String) async throws {
        try await exclusively {
            try await manager.removeBond(central, adapter: try await resolveAdapter().name)
            logger.notice("pairing: forgot \(central)")
        }
    }

    /// Tells BlueZ whether the adapter takes new bonds, as ``setPairable(_:)`` last said.
    func sendPairable(on adapter: String) async {
        do {
            try await manager.setPairable(pairable, adapter: adapter)
        } catch {
            logger.error("pairing: could not set \(adapter) \(pairable ? "pairable" : "not pairable") (\(error)); the agent refuses what the window does not allow")
        }
    }
}
