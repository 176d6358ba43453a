import Logging
public import Peripheral

/// How many advertising slots an adapter has, as BlueZ counts them now, and how many hold
/// this module's advertisements.
public struct AdapterSlots: Hashable, Sendable {
    /// The adapter, by name.
    public var adapter: String
    /// Free now (`SupportedInstances`).
    public var free: Int
    /// In use, by every program (`ActiveInstances`).
    public var active: Int
    /// In use by this module's advertisements.
    public var ours: Int
    /// Whether the adapter has no extended advertising: the kernel then shows its
    /// advertisements one at a time, 2 s each, in turn.
    public var shownInTurn: Bool

    /// A count.
    public init(adapter: String, free: Int, active: Int, ours: Int, shownInTurn: Bool = false) {
        self.adapter = adapter
        self.free = free
        self.active = active
        self.ours = ours
        self.shownInTurn = shownInTurn
    }

    /// The slots the module may use and still leave `reserve` to other programs: all but those
    /// the others hold, or `reserve` when they hold fewer.
    public func usable(reserving reserve: Int) -> Int {
        max(0, free + active - max(reserve, active - ours))
    }
}

/// Holding advertisements off air for a rotation's turns, and counting slots.
extension BluetoothModule {
    /// Keeps exactly `names` off air while they should be on: those newly held are taken off
    /// air (their `desired` unchanged, their phase `waiting`); those no longer held are put on
    /// air if they should be on.
    ///
    /// A turn never frees a slot: one newly held that is on air hands its registration to one
    /// released that waits, which the stack changes in place (`swap(_:for:)`), so the slot
    /// stays bleadvd's throughout. Any local user may register an advertisement with BlueZ, and
    /// a slot freed for an instant can be taken for good (#78). Only what cannot be handed over
    /// (the stack refused the change) is unregistered, before what is left is registered.
    public func hold(_ names: Set<String>) async {
        try? await exclusively {
            let newlyHeld = names.subtracting(held)
            let released = held.subtracting(names)
            held = names
            // Those coming on: released from their hold, or refused for want of a slot before
            // the rotation began (what waits for a slot takes the one handed over).
            let slotless = registrations.waitingForSlot.compactMap(\.advertisement).filter { !names.contains($0) }
            let incoming = released.union(slotless).sorted().filter { name in
                guard let status = registrations[.advertisement(name)]?.status, status.desired else { return false }
                switch status.phase {
                case .waiting, .retrying: return true
                case .on, .off, .paused, .failed: return false
                }
            }
            let outgoing = newlyHeld.sorted().filter { name in
                if case .on? = registrations[.advertisement(name)]?.status.phase { true } else { false }
            }
            var handedOver: Set<String> = []
            for (out, next) in zip(outgoing, incoming) where await swap(out, for: next) {
                handedOver.formUnion([out, next])
            }
            var freed = false
            for name in newlyHeld.sorted() where !handedOver.contains(name) {
                let key = Key.advertisement(name)
                guard let status = registrations[key]?.status else { continue }
                switch status.phase {
                case .on:
                    await takeOff(key)
                    freed = true
                // One retrying for a slot waits for its turn instead.
                case .retrying where status.desired:
                    registrations[key]?.status.lastError = nil
                    move(key, to: .waiting)
                case .off, .waiting, .retrying, .paused, .failed: break
                }
            }
            // What waits for a slot (a higher priority refused before the rotation began) takes
            // the one freed now, rather than at its next retry.
            if freed { await slotFreed() }
            for name in released.sorted() where !handedOver.contains(name) {
                let key = Key.advertisement(name)
                guard let status = registrations[key]?.status, status.desired else { continue }
                switch status.phase {
                case .waiting, .retrying: await attempt(key)
                case .on, .off, .paused, .failed: break
                }
            }
        }
    }

    /// Hands the registration of `outgoing` (on air, now held) to `incoming` (waiting for its
    /// turn): the stack changes the registered advertisement to `incoming`'s in place, the slot
    /// never free. Then `outgoing` waits and `incoming` is on air in its stead, checked
    /// ``updateCheckDelay`` later as any in-place update (BlueZ 5.66 to 5.73 may drop one the
    /// kernel refused). Returns false, nothing changed, when it cannot be handed over (another
    /// adapter, the stack refused the change): the caller then unregisters and registers.
    func swap(_ outgoing: String, for incoming: String) async -> Bool {
        let from = Key.advertisement(outgoing), to = Key.advertisement(incoming)
        guard case .on(let id, let adapterName)? = registrations[from]?.status.phase,
              case .advertisement(let advertisement)? = registrations[to]?.subject else { return false }
        do {
            let adapter = try await resolveAdapter()
            guard adapter.name == adapterName else { return false }
            try advertisement.validate(for: adapter)
            try await manager.updateAdvertisement(id, to: try sealed(advertisement, for: adapter))
            registrations[to]?.status.lastError = nil
            registrations[to]?.status.ignored = advertisement.fieldsIgnored(on: adapter)
            registrations[to]?.status.adapterAddress = adapter.address
            move(from, to: .waiting)
            move(to, to: .on(id, adapter: adapterName))
            registrations[to]?.checkAt = clock.now.advanced(by: Self.updateCheckDelay)
            logger.info("\(to): on air on \(adapterName) as \(id), in \(outgoing)'s slot (its turn is over)")
            return true
        } catch {
            logger.info("\(outgoing)'s slot cannot carry \(incoming) (\(error)); unregistering one and registering the other")
            return false
        }
    }

    /// The advertisements held off air (``hold(_:)``).
    public var heldNames: Set<String> { held }

    /// The slots of the adapter the advertisements go to, read from the stack now; nil while
    /// none is known (BlueZ or the adapter missing).
    public func slots() async -> AdapterSlots? {
        try? await exclusively { () async throws -> AdapterSlots? in
            let adapter = try await resolveAdapter()
            guard let now = try await manager.adapters().first(where: { $0.name == adapter.name }) else { return nil }
            let ours = registrations.keys.filter { key in
                guard key.advertisement != nil, case .on(_, let on)? = registrations[key]?.status.phase else { return false }
                return on == adapter.name
            }.count
            return AdapterSlots(
                adapter: adapter.name, free: now.freeInstances, active: now.activeInstances, ours: ours,
                shownInTurn: now.secondaryChannels.isEmpty)
        } ?? nil
    }
}
