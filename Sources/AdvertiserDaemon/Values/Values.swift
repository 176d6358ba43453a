import AdvertiserConfig
import BluetoothModule
import DBus
import Logging
import Peripheral

/// Where values are announced: the control API's `ValuesChanged` and `Written` signals, to
/// everyone without the secured values, and whole to each subscriber: ``Announcements``, which
/// keeps the subscribers.
protocol ValuesAnnouncing: AnyObject, Sendable {
    /// A service's or an advertisement's values went on air: `all` of them to the subscribers,
    /// and to everyone those `everyone` may see.
    func announceValues(_ name: String, all: [String: String], everyone: [String: String]) async
    /// A central wrote `value` (nil: a secret, shown to no one) to `id`.
    func announceWrite(_ id: GATTCharacteristicID, _ value: GATTValue?, secured: Bool, central: String) async
}

/// The values of what the config names, a component of the daemon: each advertisement's and
/// each GATT service's values (as the file gave them, in force, and as sent), the senders that
/// take values set at run time to the module at most every ``updateInterval``, and the windows
/// that announce centrals' writes at most as often. It sees the module and an announcing port,
/// never the bus; the daemon runs it (``run()``), hands it the config at reload, what
/// `bleadvctl set` gives and what centrals do, and asks it for the application to serve and
/// for the values a status shows.
actor Values<C: Clock> where C.Duration == Duration {
    /// The shortest time between two changes of one advertisement or service sent to BlueZ, and
    /// between two announcements of one characteristic's writes: values set faster than that
    /// are coalesced, the newest winning.
    static var updateInterval: Duration { .milliseconds(100) }

    /// What a name given to `set` stands for, resolved once.
    enum Target: Hashable, Sendable {
        case advertisement(String)
        case service(String)
    }

    /// Work that outlives the call that asked for it.
    enum Work: Sendable {
        /// Values were set for this advertisement or service: a sender is to take them to BlueZ.
        case send(Target)
        /// A write to this characteristic was announced: later ones wait for the interval's end.
        case writeWindow(GATTCharacteristicID)
    }

    /// One advertisement's values.
    struct Entry: Sendable {
        /// Its values: the file's, in force, and as last sent to BlueZ.
        var values: Coalesced<ConfiguredAdvertisement>
        /// BTHome's packet id, changed with each new set of values.
        var packetID: UInt8 = 0
        /// What components put in its packets now, by owner (``PacketShare``).
        var shares: [String: PacketShare] = [:]

        init(_ configured: ConfiguredAdvertisement) {
            values = Coalesced(configured)
        }

        /// The advertisement in force, with its packet id and the components' shares.
        var advertisement: Advertisement {
            var live = values.live
            for owner in shares.keys.sorted() { shares[owner]!.apply(&live) }
            // The values in force were checked when they were set, with the fullest share a
            // component puts in (a sensor's fullest event): building them again succeeds.
            return (try? live.advertisement(packetID: packetID)) ?? values.live.advertisement
        }

        /// Whether a share holds its packets as they are (``PacketShare/holds``).
        var held: Bool {
            shares.values.contains(where: \.holds)
        }
    }

    /// Writes to one characteristic taken while its last announcement is less than
    /// ``updateInterval`` old.
    struct WriteBurst: Sendable {
        /// The newest of them.
        var newest: GATTEvent
        /// How many.
        var count = 0
    }

    let module: BluetoothModule<C>
    let clock: C
    let logger: Logger
    /// Where it runs (in bleadvd, the bus connection's event loop, as the daemon).
    nonisolated let executor: any SerialExecutor
    /// Where values and writes are announced (``Announcements``), once the daemon runs
    /// (``announce(to:)``).
    weak var announcer: (any ValuesAnnouncing)?
    /// Where the length of each value sent to a characteristic that notifies is told (the
    /// centrals, who know each link's MTU), once the daemon runs (``watchSends(by:)``).
    weak var sends: (any NotifiedLengths)?
    /// Each advertisement's values, by name.
    var entries: [String: Entry]
    /// Each GATT service's values, by name.
    var services: [String: Coalesced<ConfiguredService>]
    /// The characteristics whose writes were announced less than ``updateInterval`` ago, each
    /// with the writes taken since, announced when the interval ends.
    var writeWindows: [GATTCharacteristicID: WriteBurst] = [:]
    /// The work asked for, which ``run()`` carries out.
    let works: AsyncStream<Work>
    let post: AsyncStream<Work>.Continuation

    /// The values of `advertisements` and `services` as the file gives them, running on
    /// `executor`.
    init(
        advertisements: [String: ConfiguredAdvertisement], services: [String: ConfiguredService], module: BluetoothModule<C>,
        clock: C, logger: Logger, executor: any SerialExecutor
    ) {
        entries = advertisements.mapValues(Entry.init)
        self.services = services.mapValues(Coalesced.init)
        self.module = module
        self.clock = clock
        self.logger = logger
        self.executor = executor
        (works, post) = AsyncStream<Work>.makeStream()
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Announces values and writes through `announcer` from now on.
    func announce(to announcer: any ValuesAnnouncing) {
        self.announcer = announcer
    }

    /// Tells `watcher` the length of each value sent to a characteristic that notifies.
    func watchSends(by watcher: any NotifiedLengths) {
        sends = watcher
    }

    /// Carries out the work asked for, each a child of its task group; returns when cancelled
    /// (a child of the daemon's task group).
    func run() async {
        await withDiscardingTaskGroup { group in
            for await work in works {
                switch work {
                case .send(let target): group.addTask { await self.send(target) }
                case .writeWindow(let id): group.addTask { await self.closeWindow(id) }
                }
            }
        }
    }

    // MARK: What the config names

    /// The advertisements' names, sorted.
    var names: [String] { entries.keys.sorted() }

    /// The services' names.
    var serviceNames: Set<String> { Set(services.keys) }

    /// The names of the advertisements the file enables, sorted.
    var enabledNames: [String] { names.filter { entries[$0]!.values.file.enabled } }

    /// Each advertisement in force, by name: what the module is given.
    var advertisements: [String: Advertisement] { entries.mapValues(\.advertisement) }

    /// The services in force whose names `offered` lets on air, as one application in name
    /// order; nil when there are none.
    func application(offering offered: @Sendable (String) -> Bool) -> GATTApplication? {
        let names = services.keys.sorted().filter(offered)
        return names.isEmpty ? nil : GATTApplication(services: names.map { services[$0]!.live.service })
    }

    /// The values of each advertisement as the config file would write them, by name; with
    /// `public`, those anyone may see (an encrypted sensor's readings left out).
    func advertisementValues(public: Bool = false) -> [String: [String: String]] {
        entries.keys.reduce(into: [:]) { result, name in result[name] = values(of: name, public: `public`) }
    }

    /// The values of each service: all of them, and those anyone may see.
    var serviceValues: [String: (all: [String: String], everyone: [String: String])] {
        services.mapValues { ($0.live.shownValues, $0.live.publicValues) }
    }

    /// Takes a reloaded file's advertisements: one the file did not change keeps the values set
    /// at run time; one it changed starts from the file, with a new packet id. Returns the
    /// advertisements in force, for the module.
    func reload(advertisements new: [String: ConfiguredAdvertisement]) -> [String: Advertisement] {
        var next: [String: Entry] = [:]
        for (name, configured) in new {
            guard var entry = entries[name] else {
                next[name] = Entry(configured)
                continue
            }
            if entry.values.file != configured {
                entry.packetID &+= 1
                // What holds the packets ends here (the sensor may have other buttons now: its
                // event's burst ends).
                entry.shares = entry.shares.filter { !$0.value.holds }
            }
            entry.values = entry.values.reloaded(from: configured)
            next[name] = entry
        }
        entries = next
        return advertisements
    }

    /// Takes a reloaded file's services: one the file did not change keeps the values set and
    /// written since; one it changed starts from the file.
    func reload(services new: [String: ConfiguredService]) {
        services = new.reduce(into: [:]) { next, entry in
            next[entry.key] = services[entry.key]?.reloaded(from: entry.value) ?? Coalesced(entry.value)
        }
    }

    // MARK: Values set

    /// What `name` stands for.
    /// - Throws: `PeripheralError` `unknownName` when it is neither an advertisement nor a service.
    func target(_ name: String) throws(PeripheralError) -> Target {
        if entries[name] != nil { return .advertisement(name) }
        if services[name] != nil { return .service(name) }
        throw PeripheralError.unknownName(name, kind: "advertisement or service")
    }

    /// Applies `values` to advertisement or service `name`, each checked (an advertisement's
    /// as the config file is, a service's against its characteristic's format); the new values
    /// reach BlueZ (and subscribed centrals) at most every ``updateInterval``, the newest
    /// winning. Returns once the values are accepted.
    func change(_ name: String, _ values: [String: DBusValue]) throws(PeripheralError) {
        let target = try target(name)
        let example = switch target {
        case .advertisement: "temperature=21.5"
        case .service: "\(services[name]!.live.service.characteristics.first?.name ?? "level")=80"
        }
        guard !values.isEmpty else {
            throw PeripheralError(.invalidValue, "no values given; set at least one, e.g. \(example)")
        }
        if let long = values.keys.first(where: { $0.count > 64 }) {
            let what = switch target {
            case .advertisement: "key of the config file"
            case .service: "characteristic of \(name)"
            }
            throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(long)) is no \(what)")
        }
        let startSender = switch target {
        case .advertisement: try changeAdvertisement(name, values)
        case .service: try changeService(name, values)
        }
        if startSender { post.yield(.send(target)) }
    }

    /// The advertisement's part of ``change(_:_:)``: returns whether a sender must start.
    private func changeAdvertisement(_ name: String, _ values: [String: DBusValue]) throws(PeripheralError) -> Bool {
        let entry = entries[name]!
        var changes: [String: ConfigValue] = [:]
        for (key, value) in values {
            changes[key] = try Self.configValue(value, key: key, like: entry.values.live.settings[entry.values.live.settingKey(key)])
        }
        let changed: ConfiguredAdvertisement
        let packetID = entry.packetID &+ 1
        do {
            changed = try ConfigParser.applying(changes, to: entry.values.live, name: name)
            _ = try changed.advertisement(packetID: packetID)
        } catch let error as ConfigError {
            throw PeripheralError(.invalidValue, error.description)
        } catch {
            throw PeripheralError(.invalidValue, "\(error)")
        }
        // An encrypted sensor's readings are for those who hold its key: not for the journal.
        let shown = entry.values.live.isEncrypted
            ? changes.keys.sorted().joined(separator: " ") + " (encrypted: not shown)"
            : changes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        logger.info("\(name): set \(shown)")
        // Values that are in force already change nothing, the packet id neither.
        guard changed != entry.values.live else { return false }
        entries[name]?.packetID = packetID
        return entries[name]!.values.set(changed)
    }

    /// The service's part of ``change(_:_:)``: returns whether a sender must start.
    private func changeService(_ name: String, _ values: [String: DBusValue]) throws(PeripheralError) -> Bool {
        let changed = try applying(values, to: name)
        logger.info("\(name): set \(shown(values.keys, of: name, in: changed))")
        return services[name]!.set(changed)
    }

    /// Service `name` with `values` applied, each checked against its characteristic's format;
    /// text is read as the format says (bleadvctl sends text as typed).
    /// - Throws: `invalidValue` naming the key.
    func applying(_ values: [String: DBusValue], to name: String) throws(PeripheralError) -> ConfiguredService {
        var changes: [String: ConfigValue] = [:]
        for (key, value) in values {
            if case .string(let text) = value {
                changes[key] = .string(text)
            } else {
                changes[key] = try Self.configValue(value, key: key, like: nil)
            }
        }
        do {
            return try services[name]!.live.applying(changes, name: name)
        } catch {
            throw PeripheralError(.invalidValue, error.description)
        }
    }

    /// `key=value ...` of service `name`'s `keys` as `changed` has them, for the journal: a
    /// secured value is for bonded centrals and trusted users, and is not shown.
    func shown(_ keys: some Collection<String>, of name: String, in changed: ConfiguredService) -> String {
        let live = services[name]!.live
        return keys.sorted().map { key in
            live.isSecret(key) ? "\(key)=(secret)"
                : live.isSecured(key) ? "\(key)=(secured: not shown)"
                : "\(key)=\(Untrusted.shown(changed.values[key]?.description ?? "", limit: 64))"
        }.joined(separator: " ")
    }

    /// The values of an advertisement as the config file would write them.
    func values(of name: String, public: Bool = false) -> [String: String] {
        let live = entries[name]?.values.live
        return ((`public` ? live?.publicSettings : live?.shownSettings) ?? [:]).mapValues { value in
            if case .string(let text) = value { text } else { value.description }
        }
    }

    /// Takes the newest values of `target` to the module (and BlueZ), then waits
    /// ``updateInterval`` before the next, until none is waiting. Runs as a child of
    /// ``run()``'s task group.
    func send(_ target: Target) async {
        while true {
            switch target {
            case .advertisement(let name):
                // While a share holds its packets they stay as they are (a new packet id would
                // report a BTHome event again): the values set go when it is taken out.
                if entries[name]?.held == true {
                    entries[name]?.values.senderEnded()
                    return
                }
                guard entries[name]?.values.next() != nil, let advertisement = entries[name]?.advertisement else { return }
                do {
                    try await module.update(name, to: advertisement)
                } catch {
                    logger.warning("\(name): the new values did not reach BlueZ: \(error)")
                }
                await announcer?.announceValues(name, all: values(of: name), everyone: values(of: name, public: true))
            case .service(let name):
                guard let (sent, live) = services[name]?.next() else { return }
                for characteristic in live.service.characteristics {
                    let before = sent.service.characteristics.first { $0.name == characteristic.name }
                    guard before?.value != characteristic.value else { continue }
                    let id = GATTCharacteristicID(service: name, characteristic: characteristic.name)
                    try? await module.setValue(characteristic.value, of: id)
                    if !characteristic.flags.isDisjoint(with: [.notify, .indicate]) { await sends?.sent(id, length: characteristic.value.count) }
                }
                await announcer?.announceValues(name, all: live.shownValues, everyone: live.publicValues)
            }
            guard (try? await clock.sleep(for: Self.updateInterval)) != nil else {
                switch target {
                case .advertisement(let name): entries[name]?.values.senderEnded()
                case .service(let name): services[name]?.senderEnded()
                }
                return
            }
        }
    }

    /// A value from the bus as the config's type: text is read as the type its key holds now.
    static func configValue(_ value: DBusValue, key: String, like current: ConfigValue?) throws(PeripheralError) -> ConfigValue {
        switch value {
        case .string(let text): return ConfigValue(parsing: text, like: current)
        case .boolean(let flag): return .bool(flag)
        case .double(let number) where number.isFinite: return .double(number)
        case .double(let number): throw PeripheralError(.invalidValue, "\(key): is \(number); give a finite number")
        case .byte(let n): return .integer(Int(n))
        case .int16(let n): return .integer(Int(n))
        case .uint16(let n): return .integer(Int(n))
        case .int32(let n): return .integer(Int(n))
        case .uint32(let n): return .integer(Int(n))
        case .int64(let n): return .integer(Int(n))
        case .uint64(let n) where n <= UInt64(Int.max): return .integer(Int(n))
        case .uint64(let n): throw PeripheralError(.invalidValue, "\(key): is \(n); no key takes a number over \(Int.max)")
        default:
            if let texts = value.stringArray { return .array(texts.map { .string($0) }) }
            throw PeripheralError(.invalidValue, "\(key): a value of D-Bus type '\(value.type)' cannot be set; use a string, a number, a boolean or an array of strings")
        }
    }

    // MARK: A component's own service and advertisement

    /// The characteristics of service `name` take `values`, each at once and in this order,
    /// and its advertisement takes `advertisement` (sent as values set are): what a component
    /// that owns them shows (through the ``Stage``).
    func show(_ name: String, _ values: [(characteristic: String, bytes: [UInt8])], advertisement: ConfiguredAdvertisement) async {
        for (characteristic, bytes) in values {
            services[name]?.held { $0.store(.bytes(bytes), bytes: bytes, for: characteristic) }
            try? await module.setValue(bytes, of: GATTCharacteristicID(service: name, characteristic: characteristic))
        }
        if entries[name]?.values.live != advertisement, entries[name]?.values.set(advertisement) == true {
            post.yield(.send(.advertisement(name)))
        }
    }

    /// Service `name` starts afresh from `service` (its component begins anew).
    func replace(_ name: String, with service: ConfiguredService) {
        services[name] = Coalesced(service)
    }

    // MARK: What centrals do

    /// What a connected central did: a write becomes the value in force at once, and is
    /// announced (a `Written` signal, so a script can act on it, and a journal line) at most
    /// once per ``updateInterval`` per characteristic: a central writing 1,000 times a second
    /// costs ten signals and ten lines, each with the newest value and how many it stands for.
    func centralDid(_ event: GATTEvent) async {
        let id = event.characteristic
        switch event.kind {
        case .written(let bytes, let value):
            guard services[id.service]?.live.service.characteristics.contains(where: { $0.name == id.characteristic }) == true else { return }
            // What BlueZ holds now, in force and as sent: no sender takes it there, and a set
            // of another characteristic still on its way goes on.
            services[id.service]?.held { $0.store(value, bytes: bytes, for: id.characteristic) }
            if writeWindows[id] != nil {
                writeWindows[id]!.newest = event
                writeWindows[id]!.count += 1
                return
            }
            writeWindows[id] = WriteBurst(newest: event)
            post.yield(.writeWindow(id))
            await announce(event, of: 1)
        case .subscribed, .unsubscribed:
            break  // the centrals' component says and announces them
        case .read:
            logger.debug("\(id): \(Central.named(event.central)) read it")
        }
    }

    /// Ends the announcement interval of `id`'s writes: announces the newest write taken
    /// during it, if any, and starts another interval; else closes. Runs as a child of
    /// ``run()``'s task group.
    func closeWindow(_ id: GATTCharacteristicID) async {
        while (try? await clock.sleep(for: Self.updateInterval)) != nil, let burst = writeWindows[id], burst.count > 0 {
            writeWindows[id]!.count = 0
            await announce(burst.newest, of: burst.count)
        }
        writeWindows[id] = nil
    }

    /// The journal line and the `Written` signal for a write, the newest of `count`.
    private func announce(_ event: GATTEvent, of count: Int) async {
        let id = event.characteristic
        // A reload may have taken the characteristic away meanwhile: whether it held secrets
        // is then unknown, and nothing is announced.
        guard case .written(let bytes, let value) = event.kind,
              let service = services[id.service]?.live, service.values[id.characteristic] != nil else { return }
        // A write-only value is a secret: the log and the signal say that it was written, by
        // whom and how long it is, never what it is.
        // A secured one is for bonded centrals and trusted users: the journal (group adm reads
        // it) does not show it either.
        let secret = service.isSecret(id.characteristic)
        let shown = if secret { "a secret (\(bytes.count) bytes, not shown)" }
            else if service.isSecured(id.characteristic) { "a secured value (\(bytes.count) bytes, not shown)" }
            else if case .text(let text) = value { Untrusted.quoted(text, limit: 64) } else { value.description }
        let who = Central.named(event.central)
        logger.notice("\(id): \(who) wrote \(shown)\(count > 1 ? " (the newest of \(count) writes in \(Self.updateInterval))" : "")")
        await announcer?.announceWrite(id, secret ? nil : value, secured: service.isSecured(id.characteristic), central: event.central)
    }
}

/// What Values takes of BlueZ's events: what centrals do, at once (a write is the value in
/// force before the next event is handed out).
extension Values: DaemonComponent {
    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<GATTEvent> {
        if case .gatt(let gatt) = event { .now(gatt) } else { .pass }
    }

    func take(_ event: GATTEvent) async {
        await centralDid(event)
    }
}
