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
    /// air (their `desired` unchanged, their phase `waiting`); those no longer held are
    /// registered if they should be on. Names first held are unregistered before names released
    /// are registered, so a turn frees its slot before the next takes it.
    public func hold(_ names: Set<String>) async {
        try? await exclusively {
            let newlyHeld = names.subtracting(held)
            let released = held.subtracting(names)
            held = names
            var freed = false
            for name in newlyHeld.sorted() {
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
            for name in released.sorted() {
                let key = Key.advertisement(name)
                guard let status = registrations[key]?.status, status.desired else { continue }
                switch status.phase {
                case .waiting, .retrying: await attempt(key)
                case .on, .off, .paused, .failed: break
                }
            }
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
