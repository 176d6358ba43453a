import AdvertiserControl
import AdvertiserConfig
import BluetoothModule
import Events
import Logging
import Peripheral

/// What the rotation needs of an advertisement's state: whether it wants to be on air, and
/// whether it waits for want of a free slot.
struct SlotDemand: Hashable, Sendable {
    /// It should be on air, and nothing but a slot keeps it off (not off, not refused for good).
    var wanted: Bool
    /// The stack refused it for want of a free slot ("Maximum advertisements reached").
    var crowded: Bool
}

/// The rotation's port: what keeps the advertisements registered (the module).
protocol SlotKeeping: AnyObject, Sendable {
    /// Each advertisement's demand at every change.
    func demands() async -> any AsyncSequence<[String: SlotDemand], Never> & Sendable
    /// Keeps exactly `names` off air while they should be on.
    func hold(_ names: Set<String>) async
    /// The slots of the adapter in use, counted now; nil while none is known.
    func slots() async -> AdapterSlots?
}

/// More advertisements than slots (#67), a component of the daemon: when the advertisements that
/// should be on air outnumber the slots bleadvd may use (the adapter's, less those other programs
/// hold or `reserve_slots` leaves them), they take turns through them by ``RotationPlan``:
/// higher priorities stay on air, the first priority that does not fit rotates, one
/// advertisement out and the next in every `rotate_seconds`, and those below it wait.
///
/// It looks at the slots (one read of BlueZ's objects) when the advertisements wanted change,
/// when one is refused for want of a slot, when an adapter is added or powered on while it
/// shares them, and at each turn (also while some only wait); with everything fitting it arms
/// no timer and costs nothing. It owns one timer, on the injected clock.
actor Rotation<C: Clock> where C.Duration == Duration {
    let port: any SlotKeeping
    let clock: C
    let logger: Logger
    nonisolated let executor: EventLoop
    private(set) var config: SlotsConfig
    /// Each advertisement's priority, from the config.
    private(set) var priorities: [String: Int]
    /// The advertisements that want to be on air, as the port last said.
    private(set) var members: Set<String> = []
    /// The plan in force; nil before the first.
    private(set) var plan: RotationPlan?
    /// The slots the plan was made for.
    private(set) var usable = 0
    /// The turn's number: the window of on-air names moves one name each turn.
    private(set) var turn = 0
    /// How long a turn lasts: `rotate_seconds`, or longer where the kernel shows the adapter's
    /// advertisements one at a time (``turnLength(_:plan:slots:)``).
    private(set) var turnLength: Duration = .seconds(10)

    /// How long the kernel shows each advertisement on an adapter without extended
    /// advertising before the next (its default; bleadvd asks no `Duration`).
    static var kernelTurn: Duration { .seconds(2) }
    private var timer: Task<Void, Never>?
    /// Whether the plan in force shares the slots: some take turns or wait.
    private var sharing: Bool { plan?.shares.isEmpty == false }

    init(config: DaemonConfig, port: any SlotKeeping, clock: C, logger: Logger, executor: EventLoop) {
        self.port = port
        self.clock = clock
        self.logger = logger
        self.executor = executor
        self.config = config.slots
        priorities = config.advertisements.mapValues(\.priority)
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// A reload's priorities and `[slots]`: planned again at once.
    func reconfigure(from config: DaemonConfig) async {
        let next = config.advertisements.mapValues(\.priority)
        guard next != priorities || config.slots != self.config else { return }
        priorities = next
        self.config = config.slots
        await replan()
    }

    /// Each advertisement's part in the rotation, by name: those that take turns or wait;
    /// empty when everything fits.
    func shares() -> [String: RotationPlan.Share] {
        plan?.shares ?? [:]
    }

    /// Its share in `status`: one taking turns rotates, with its share of the air; one whose
    /// priority has no slot waits, and says why.
    func contribute(to states: [String: AdvertisementState]) -> [String: AdvertisementState] {
        var states = states
        for (name, share) in shares() {
            guard var state = states[name], state.desired, state.state == .on || state.state == .waiting else { continue }
            if share.slots > 0 {
                state.state = .rotating
                state.airShare = share.fraction
            } else {
                state.error = "no slot for its priority: advertisements of higher priority hold them all"
            }
            states[name] = state
        }
        return states
    }

    /// The demands changed. Planned again when one was refused for want of a slot while no plan
    /// shares the slots, or when the advertisements wanted changed while one does, or while
    /// slots are reserved. Otherwise nothing is read: with every advertisement fitting and
    /// nothing reserved, the rotation asks the stack nothing.
    func consider(_ demands: [String: SlotDemand]) async {
        let wanted = Set(demands.filter(\.value.wanted).keys)
        let crowded = demands.values.contains(where: \.crowded)
        let changed = wanted != members
        members = wanted
        guard (crowded && !sharing) || (changed && (sharing || crowded || config.reserve > 0)) else { return }
        await replan()
    }

    /// Counts the slots and applies the plan of this turn.
    func replan() async {
        let wanted = members.filter { priorities[$0] != nil }
        guard !wanted.isEmpty else {
            if plan != nil { await port.hold([]) }
            plan = nil
            arm()
            return
        }
        guard let slots = await port.slots() else {
            // BlueZ or the adapter is away: the turns wait for it, and what is held stays held
            // (releasing it would only queue registrations that cannot fit when it is back).
            arm()
            return
        }
        usable = slots.usable(reserving: config.reserve)
        guard usable > 0 else {
            // No slot at all (other programs hold them): nothing to share; the module retries
            // for a slot as it always does, and says so.
            if plan != nil { await port.hold([]) }
            if sharing { logger.notice("slots: none free for bleadvd on \(slots.adapter); no turns until one is") }
            plan = nil
            arm()
            return
        }
        let next = RotationPlan(priorities: priorities.filter { wanted.contains($0.key) }, slots: usable, turn: turn)
        turnLength = Self.turnLength(config.rotateEvery, plan: next, slots: slots)
        await port.hold(wanted.subtracting(next.onAir))
        if next.shares != plan?.shares || plan == nil { say(next, slots: slots) }
        plan = next
        arm()
    }

    /// A turn's length for `plan` on `slots`: `rotate_seconds`, unless the kernel shows the
    /// adapter's advertisements one at a time (no extended advertising), 2 s each: one that
    /// joins its list is shown after every other on air, so it must stay on air through the
    /// kernel's whole round and its own 2 s ((slots + 1) x 2 s) across the turns it is in the
    /// window (as many as the slots that take turns). Captured in scenario 76 on Debian 13
    /// without extended advertising: turns of 2 s kept each advertisement registered for 8 s,
    /// less than the kernel's 10-s round among 5, and hci1 never heard one of them.
    static func turnLength(_ asked: Duration, plan: RotationPlan, slots: AdapterSlots) -> Duration {
        guard slots.shownInTurn, let window = plan.shares.values.map(\.slots).max(), window > 0 else { return asked }
        let round = kernelTurn * (slots.free + slots.active + 1)
        let needed = round / window
        return max(asked, .seconds((needed / .seconds(1)).rounded(.up)))
    }

    /// The next turn.
    func step() async {
        timer = nil
        turn += 1
        let before = plan?.onAir ?? []
        await replan()
        let after = plan?.onAir ?? []
        guard before != after else { return }
        logger.debug("slots: turn \(turn): off air \(before.subtracting(after).sorted()), on air \(after.subtracting(before).sorted())")
    }

    /// The journal's account of a plan whose shape is new.
    private func say(_ plan: RotationPlan, slots: AdapterSlots) {
        let others = slots.active - slots.ours
        let room = "\(usable) of \(slots.free + slots.active) slot(s) on \(slots.adapter)"
            + (others > 0 || config.reserve > 0 ? " (\(max(others, config.reserve)) left to other programs)" : "")
        guard !plan.shares.isEmpty else {
            if sharing { logger.notice("slots: every advertisement fits in \(room) again; no turns") }
            return
        }
        let turning = plan.shares.filter { $0.value.slots > 0 }.keys.sorted()
        let waiting = plan.shares.filter { $0.value.slots == 0 }.keys.sorted()
        let fixed = plan.onAir.subtracting(turning).sorted()
        var parts: [String] = []
        if !fixed.isEmpty { parts.append("\(fixed.joined(separator: ", ")) on air throughout") }
        if let share = turning.first.flatMap({ plan.shares[$0] }) {
            var part = "\(turning.joined(separator: ", ")) take turns through \(share.slots) slot(s), "
                + "\(Int(turnLength.components.seconds)) s a turn, each on air \(share.slots)/\(share.among) of the time"
            if turnLength > config.rotateEvery {
                part += " (not \(Int(config.rotateEvery.components.seconds)) s: without extended advertising the kernel shows "
                    + "\(slots.free + slots.active) in turn, 2 s each, and each must stay through that round)"
            }
            parts.append(part)
        }
        if !waiting.isEmpty { parts.append("\(waiting.joined(separator: ", ")) wait: higher priorities hold every slot") }
        logger.notice("slots: \(plan.shares.count + fixed.count) advertisement(s) for \(room): \(parts.joined(separator: "; "))")
    }

    /// Keeps the timer armed while something takes turns or waits: a turn counts the slots
    /// again, so that those waiting below a favoured advertisement go on air once more slots
    /// are free (another program freed one; bluetoothd came back reading more from the
    /// controller: the soak's stall at SEED=80, where four waited for good).
    private func arm() {
        guard sharing else {
            timer?.cancel()
            timer = nil
            return
        }
        guard timer == nil else { return }
        let due = clock.now.advanced(by: turnLength)
        timer = Task(executorPreference: executor) { [clock] in
            guard (try? await clock.sleep(until: due, tolerance: nil)) != nil else { return }
            await self.step()
        }
    }

    /// Plans at every change of the demands until cancelled (the daemon stops).
    func run() async {
        for await demands in await port.demands() {
            await consider(demands)
        }
        timer?.cancel()
    }
}

/// The rotation takes an adapter added or powered on (bluetoothd back, a controller replugged):
/// the slots may be others now, and while it shares them it counts them again at once. Its
/// other inputs are the module's states and the clock.
extension Rotation: DaemonComponent {
    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<Void> {
        switch event {
        case .adapterAdded, .adapterPowered(_, true, _): .inTurn(())
        default: .pass
        }
    }

    /// One waiting is enough: each counts the slots as they are when it is taken, so a burst
    /// (a local user toggling an adapter's power) costs one count, not one each.
    nonisolated var backlog: Int? { 1 }
    nonisolated func dropped(_ input: Void) -> String { "slots: an adapter's change merged with one waiting to be counted" }

    func take(_ input: Void) async {
        guard sharing else { return }
        await replan()
    }
}

/// The module is the rotation's port.
extension BluetoothModule: SlotKeeping {
    func demands() async -> any AsyncSequence<[String: SlotDemand], Never> & Sendable {
        changes().map { Self.demands($0) }
    }

    static func demands(_ statuses: [RegistrationKey: Status]) -> [String: SlotDemand] {
        statuses.advertisements.mapValues { status in
            let wanted: Bool = switch status.phase {
            case .off, .failed: false
            case .on, .waiting, .retrying, .paused: status.desired
            }
            return SlotDemand(wanted: wanted, crowded: status.lastError?.code == .noFreeInstance)
        }
    }
}
