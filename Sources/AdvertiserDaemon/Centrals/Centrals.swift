import AdvertiserConfig
import AdvertiserControl
import Events
import Logging
import Peripheral

/// Told the length of each value sent to a characteristic that notifies: BlueZ sends a
/// notification of what a link's MTU carries (MTU − 3 bytes), and cuts the rest.
protocol NotifiedLengths: AnyObject, Sendable {
    /// A value of `length` bytes went to `id`, whose subscribers are notified of it.
    func sent(_ id: GATTCharacteristicID, length: Int) async
}

/// The centrals connected to the adapters, a component of the daemon: who is connected since
/// when, bonded or not (asked of BlueZ when someone lists them, at most once a second whoever
/// asks, never at a link's start, while bluetoothd sets the link up and the central
/// discovers), the link's MTU as its reads and writes show it, what it subscribed to, and
/// when each last did something. It announces each
/// link's start, what it carries (MTU, cuts), each subscription and its end, ends a link on
/// request (`Disconnect`), ends one beyond `max_centrals` at once and one idle past
/// `idle_disconnect_seconds`.
actor Centrals<C: Clock>: CentralsControl, NotifiedLengths where C.Duration == Duration {
    /// One central's link.
    struct Link: Sendable {
        var adapter: String
        var since: C.Instant
        var mtu: Int?
        var active: C.Instant
        /// Why bleadvd is ending it, once it asked BlueZ to.
        var ending: String?
        /// The characteristics whose notifications its MTU cuts, said once each.
        var cut: Set<GATTCharacteristicID> = []
        /// The characteristics it subscribed to: those BlueZ named it for (a socket per
        /// central), and those subscribed to while this link was the only one (`StartNotify`
        /// names no central).
        var subscribed: Set<GATTCharacteristicID> = []
    }

    let manager: any LinkManaging & BondManaging & StackAnswering
    let port: any ControlSignalling
    let clock: C
    let logger: Logger
    nonisolated let executor: EventLoop
    private(set) var config: CentralsConfig
    /// The links up, by the central's address.
    private(set) var links: [String: Link] = [:]
    /// The length of the last value sent to each characteristic that notifies.
    private var lengths: [GATTCharacteristicID: Int] = [:]
    /// The idle timer: one task, sleeping until the earliest link's idle time runs out.
    private var idleTimer: Task<Void, Never>?
    /// The bonded centrals of each adapter, as BlueZ last said (an adapter it did not answer for
    /// is missing).
    private var bonded: [String: Set<String>] = [:]
    /// When the last read of the bonds began; nil before the first.
    private var bondsRead: C.Instant?
    /// The read of the bonds under way.
    private var bondsReading: Task<Void, Never>?
    /// The least time between two reads of the bonds: each is a `GetManagedObjects` of BlueZ,
    /// which took 1.0–1.4 s while links were set up, so listings do not each cost one.
    static var bondsInterval: Duration { .seconds(1) }

    /// The owner's centrals: those bonded through bleadvd (its bond record), read when a link
    /// finds the links full.
    let owners: @Sendable () -> Set<String>

    init(
        config: CentralsConfig, manager: any LinkManaging & BondManaging & StackAnswering, port: any ControlSignalling, clock: C, logger: Logger, executor: EventLoop,
        owners: @escaping @Sendable () -> Set<String> = { [] }
    ) {
        self.owners = owners
        self.config = config
        self.manager = manager
        self.port = port
        self.clock = clock
        self.logger = logger
        self.executor = executor
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    // MARK: CentralsControl

    /// The links, from what bleadvd knows; bonded as BlueZ said at the last read of the bonds,
    /// made now when none began within ``bondsInterval`` and none is under way. The read is
    /// waited for `Deadline.readWait` at most, and not at all while a call to BlueZ has waited half
    /// a second already: then the bonds read before are shown (a control call answers within a
    /// second while bluetoothd is stuck).
    func centrals() async -> [CentralState] {
        if let reading = readBondsIfDue(), await manager.unanswered() == nil {
            _ = await Deadline.within(Deadline.readWait, on: clock, executor: executor) { await reading.value }
        }
        let now = clock.now
        let dropped = await manager.notificationsDropped()
        return links.map { address, link in
            CentralState(
                address: address, adapter: link.adapter, sinceSeconds: link.since.duration(to: now).inSeconds,
                bonded: bonded[link.adapter].map { $0.contains(address) },
                mtu: link.mtu, idleSeconds: link.active.duration(to: now).inSeconds, cut: link.cut.map(\.description).sorted(),
                subscribed: link.subscribed.map(\.description).sorted(), dropped: dropped[address] ?? 0)
        }
    }

    /// Asks BlueZ for the bonds of the adapters with links, in a task of its own, unless one
    /// began less than ``bondsInterval`` ago: at most one read a second, whoever lists. The
    /// read under way, if any.
    private func readBondsIfDue() -> Task<Void, Never>? {
        let now = clock.now
        let adapters = Set(links.values.map(\.adapter))
        if let bondsReading { return bondsReading }
        guard !adapters.isEmpty, bondsRead.map({ $0.duration(to: now) >= Self.bondsInterval }) ?? true else { return nil }
        bondsRead = now
        // On the loop, as everything bleadvd does.
        let reading = Task(executorPreference: executor) { [self] in await readBonds(of: adapters) }
        bondsReading = reading
        return reading
    }

    /// Reads the bonds of `adapters`; an adapter BlueZ did not answer for keeps what it said last.
    private func readBonds(of adapters: Set<String>) async {
        defer { bondsReading = nil }
        var read: [String: Set<String>] = [:]
        for adapter in adapters.sorted() {
            read[adapter] = (try? await manager.bonds(adapter: adapter)).map { Set($0.map(\.central)) } ?? bonded[adapter]
        }
        bonded = read
    }

    func disconnect(_ central: String) async throws(PeripheralError) {
        let address = central.uppercased()
        guard links[address] != nil else {
            throw PeripheralError(.unknownName, "\(PeripheralError.quoted(central)) is not connected\(links.isEmpty ? "" : "; connected: \(links.keys.sorted().joined(separator: ", "))")")
        }
        try await end(address, because: "bleadvctl disconnect")
    }

    // MARK: Links

    /// A link came up: recorded and announced; one beyond `max_centrals` on its adapter is
    /// ended at once, unless it is the owner's (``owners``): then the least active link on the
    /// adapter that is not an owner's ends instead, so that a stranger holding a link (and
    /// reading to stay active) never keeps the owner out. BlueZ is asked nothing else.
    func connected(_ central: String, adapter: String) async {
        guard links[central] == nil else { return }
        let now = clock.now
        links[central] = Link(adapter: adapter, since: now, active: now)
        logger.info("\(Central.named(central)) connected to \(adapter)")
        await port.emit(ControlAPI.Connected(central: central, adapter: adapter))
        let others = links.filter { $0.key != central && $0.value.adapter == adapter && $0.value.ending == nil }
        if let maximum = config.maximum, others.count >= maximum {
            let owners = owners()
            let stranger = owners.contains(central)
                ? others.filter { !owners.contains($0.key) }.min { ($0.value.active, $0.key) < ($1.value.active, $1.key) }?.key : nil
            if let stranger {
                try? await end(stranger, because: "max_centrals \(maximum): \(Central.named(central)), bonded through bleadvd, takes the least active link's place")
            } else {
                try? await end(central, because: "max_centrals \(maximum): \(others.count) already connected to \(adapter)")
            }
        }
        armIdleTimer()
    }

    /// A link ended: announced, with why when bleadvd ended it.
    func disconnected(_ central: String) async {
        guard let link = links.removeValue(forKey: central) else { return }
        logger.info("\(Central.named(central))'s link with \(link.adapter) ended after \(link.since.duration(to: clock.now))")
        await port.emit(ControlAPI.Disconnected(central: central, adapter: link.adapter, reason: link.ending ?? ""))
        armIdleTimer()
    }

    /// A central read, wrote or subscribed: it is active, and its MTU is what BlueZ said; a new
    /// MTU is announced, with the cuts it makes.
    func active(_ central: String, mtu: Int?) async {
        guard links[central] != nil else { return }
        links[central]!.active = clock.now
        guard let mtu, links[central]!.mtu != mtu else { return }
        links[central]!.mtu = mtu
        for (id, length) in lengths.sorted(by: { $0.key.description < $1.key.description }) { check(central, id, length: length) }
        await announce(central)
    }

    /// `central` turned `id`'s notifications on or off, with its link's `mtu` (BlueZ named it,
    /// giving it a socket): kept with its link, and announced. With no central, BlueZ called
    /// `StartNotify` (`on`: a central turned them on; it does not say which) or `StopNotify`
    /// (none is subscribed any longer): announced, and kept with the link when only one was up,
    /// as the central that asked.
    func subscription(_ id: GATTCharacteristicID, on: Bool, central: String = "", mtu: Int? = nil) async {
        if !central.isEmpty {
            if on {
                links[central]?.subscribed.insert(id)
                logger.info("\(id): \(Central.named(central)) subscribed\(mtu.map { " (ATT MTU \($0))" } ?? "")")
                await active(central, mtu: mtu)
            } else {
                links[central]?.subscribed.remove(id)
                logger.info("\(id): \(Central.named(central))'s subscription ended")
            }
        } else if on {
            if links.count == 1, let only = links.keys.first {
                links[only]!.subscribed.insert(id)
                links[only]!.active = clock.now
                logger.info("\(id): \(Central.named(only)) subscribed")
            } else {
                logger.info("\(id): a central subscribed (BlueZ does not say which; \(links.count) connected)")
            }
        } else {
            for central in links.keys { links[central]!.subscribed.remove(id) }
            logger.info("\(id): no central is subscribed any longer")
        }
        await port.emit(ControlAPI.Subscription(id, subscribed: on, central: central))
    }

    /// Says, once per central and characteristic, a notification its MTU cuts; true when it
    /// said one.
    @discardableResult
    private func check(_ central: String, _ id: GATTCharacteristicID, length: Int) -> Bool {
        guard let mtu = links[central]?.mtu, length > mtu - 3, links[central]!.cut.insert(id).inserted else { return false }
        logger.notice("\(id): a notification of its \(length)-byte value reaches \(Central.named(central)) cut to \(mtu - 3) bytes, if it subscribed (its link's ATT MTU is \(mtu), and BlueZ sends what that carries); a read gets it whole")
        return true
    }

    /// Announces what `central`'s link carries (`LinkChanged`).
    private func announce(_ central: String) async {
        guard let link = links[central], let mtu = link.mtu else { return }
        await port.emit(ControlAPI.LinkChanged(central: central, adapter: link.adapter, mtu: UInt16(clamping: mtu), cut: link.cut.map(\.description).sorted()))
    }

    /// Every link of `adapter` (nil: of every adapter) ended with it, or with bluetoothd.
    func allEnded(on adapter: String?) async {
        for (central, link) in links where adapter == nil || link.adapter == adapter { await disconnected(central) }
    }

    /// Asks BlueZ to end `central`'s link; the journal says why.
    private func end(_ central: String, because reason: String) async throws(PeripheralError) {
        guard let link = links[central] else { return }
        links[central]!.ending = reason
        logger.notice("\(Central.named(central)): ending its link with \(link.adapter) (\(reason))")
        do {
            try await manager.disconnect(central, adapter: link.adapter)
        } catch let error as PeripheralError {
            links[central]?.ending = nil
            logger.warning("\(Central.named(central)): its link could not be ended: \(error.message)")
            throw error
        } catch {
            links[central]?.ending = nil
            throw PeripheralError(.failed, "\(error)")
        }
    }

    // MARK: Idle

    /// Keeps one timer armed for the earliest link to become idle past `idle_disconnect_seconds`.
    private func armIdleTimer() {
        idleTimer?.cancel()
        idleTimer = nil
        guard let idle = config.idleDisconnect,
              let next = links.values.filter({ $0.ending == nil }).map({ $0.active.advanced(by: idle) }).min() else { return }
        idleTimer = Task(executorPreference: executor) { [clock] in
            guard (try? await clock.sleep(until: next, tolerance: nil)) != nil else { return }
            await self.idleTimerFired()
        }
    }

    /// Ends the links idle for `idle_disconnect_seconds`, and arms the timer for the next.
    func idleTimerFired() async {
        idleTimer = nil
        if let idle = config.idleDisconnect {
            let now = clock.now
            for (central, link) in links.sorted(by: { $0.key < $1.key }) where link.ending == nil && link.active.duration(to: now) >= idle {
                try? await end(central, because: "idle for \(Int(link.active.duration(to: now).inSeconds)) s, idle_disconnect_seconds \(idle.components.seconds)")
            }
        }
        armIdleTimer()
    }

    /// A value of `length` bytes went to `id`, which notifies.
    func sent(_ id: GATTCharacteristicID, length: Int) async {
        lengths[id] = length
        for central in links.keys.sorted() where check(central, id, length: length) { await announce(central) }
    }

    /// A reload's `[centrals]`: the timer follows it; links beyond a lower maximum stay.
    func reconfigure(from config: DaemonConfig) {
        reconfigure(config.centrals)
    }

    func reconfigure(_ config: CentralsConfig) {
        self.config = config
        armIdleTimer()
    }

    /// Waits until cancelled (the daemon stops), then stops the timer.
    func run() async {
        let (never, keep) = AsyncStream<Never>.makeStream()
        for await _ in never {}
        withExtendedLifetime(keep) {}
        idleTimer?.cancel()
    }
}

/// What it takes of BlueZ's events: links up and down, what centrals do (for idle and MTU),
/// subscriptions, and bluetoothd or an adapter going (every link with it).
extension Centrals: DaemonComponent {
    enum Input: Sendable {
        case connected(String, adapter: String)
        case disconnected(String)
        case active(String, mtu: Int?)
        case subscription(GATTCharacteristicID, on: Bool, central: String, mtu: Int?)
        case allEnded(adapter: String?)
    }

    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<Input> {
        switch event {
        case .connected(let central, let adapter): .inTurn(.connected(central, adapter: adapter))
        case .disconnected(let central, _): .inTurn(.disconnected(central))
        case .gatt(let gatt) where gatt.kind == .subscribed || gatt.kind == .unsubscribed:
            .inTurn(.subscription(gatt.characteristic, on: gatt.kind == .subscribed, central: gatt.central, mtu: gatt.mtu))
        // At once: a note in a table, which a central's flood of writes must not queue up.
        case .gatt(let gatt) where !gatt.central.isEmpty: .now(.active(gatt.central, mtu: gatt.mtu))
        case .bluezVanished: .inTurn(.allEnded(adapter: nil))
        case .adapterRemoved(let adapter, _), .adapterPowered(let adapter, false, _): .inTurn(.allEnded(adapter: adapter))
        default: .pass
        }
    }

    func take(_ input: Input) async {
        switch input {
        case .connected(let central, let adapter): await connected(central, adapter: adapter)
        case .disconnected(let central): await disconnected(central)
        case .active(let central, let mtu): await active(central, mtu: mtu)
        case .subscription(let id, let on, let central, let mtu): await subscription(id, on: on, central: central, mtu: mtu)
        case .allEnded(let adapter): await allEnded(on: adapter)
        }
    }
}
