import AdvertiserConfig
package import AdvertiserControl
import BluetoothModule
package import DBus
import Logging
package import Peripheral

/// The control API's advertising part, a component of the daemon: `on`, `off`, `status`,
/// `list`, `set` and `Subscribe`. It asks the module, Values and the stage, assembles each
/// advertisement's and service's state with every component's share in it
/// (``DaemonComponent/contribute(to:)-([String:AdvertisementState])``: the rotation's), and
/// follows each subscriber until it leaves the bus. The daemon reads its states to publish them.
package actor Advertising<C: Clock>: AdvertisingControl where C.Duration == Duration {
    let module: BluetoothModule<C>
    let values: Values<C>
    let stage: Stage<C>
    let announcements: Announcements
    let clock: C
    /// The components whose share of each state it adds.
    let components: [any DaemonComponent]
    /// The subscribers to follow, which ``run()`` follows until each leaves the bus.
    let subscribers: AsyncStream<String>
    let followed: AsyncStream<String>.Continuation
    nonisolated let executor: any SerialExecutor

    /// The advertising part over `module`, `values` and `stage`, with the share of each of
    /// `components`, announcing values through `announcements`, running on `executor`.
    init(
        module: BluetoothModule<C>, values: Values<C>, stage: Stage<C>, announcements: Announcements, clock: C,
        components: [any DaemonComponent], executor: any SerialExecutor
    ) {
        (self.module, self.values, self.stage, self.announcements, self.clock) = (module, values, stage, announcements, clock)
        self.components = components
        self.executor = executor
        (subscribers, followed) = AsyncStream<String>.makeStream()
    }

    package nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    // MARK: AdvertisingControl

    package func on(_ names: [String]) async throws(PeripheralError) {
        // What a component withholds stays withheld (Improv while the Wi-Fi is connected, or
        // once it provisioned): `on` is group bleadvd's, and Improv on air would let strangers
        // in range provision.
        for name in names {
            if let refusal = await stage.refusal(name) { throw PeripheralError(.invalid, refusal) }
        }
        var targets = names
        if names.isEmpty {
            for name in await values.names where await stage.isOffered(name) { targets.append(name) }
        }
        guard !targets.isEmpty else { return }
        try await each(targets) { [module] name throws(PeripheralError) in try await PeripheralError.caught { try await module.on(name) } }
    }

    package func off(_ names: [String]) async throws(PeripheralError) {
        try await each(names) { [module] name throws(PeripheralError) in try await PeripheralError.caught { try await module.off(name) } }
    }

    package func status() async -> [String: AdvertisementState] {
        let statuses = await module.status()
        return await states(statuses.advertisements, values: await values.advertisementValues())
            .merging(await serviceStates(statuses[.application])) { advertisement, _ in advertisement }
    }

    package func set(_ name: String, _ new: [String: DBusValue]) async throws(PeripheralError) {
        if let refusal = await stage.setRefusal(name) { throw PeripheralError(.invalid, refusal) }
        try await values.change(name, new)
    }

    package func notify(_ name: String, central: String, _ new: [String: DBusValue]) async throws(PeripheralError) {
        try await values.notify(name, central: central, new)
    }

    package func list() async -> [String] {
        Set(await values.names).union(await values.serviceNames).sorted()
    }

    // MARK: Subscribers

    package func status(for caller: String) async -> [String: AdvertisementState] {
        var states = await status()
        let services = await values.serviceValues
        let advertisements = await values.advertisementValues(public: true)
        let hides = services.values.contains { $0.everyone.count < $0.all.count }
            || advertisements.contains { $0.value.count < (states[$0.key]?.values.count ?? 0) }
        guard hides, await !announcements.isTrusted(caller) else { return states }
        for (name, shown) in services where states[name]?.kind == .service {
            states[name]!.values = shown.everyone
        }
        for (name, shown) in advertisements where states[name]?.kind != .service {
            states[name]?.values = shown
        }
        return states
    }

    package func subscribe(_ caller: String) async throws(PeripheralError) {
        if try await announcements.subscribe(caller) { followed.yield(caller) }
    }

    // MARK: States

    /// The control API's view of the module's states, with each advertisement's `values` and
    /// each component's share in them.
    func states(_ statuses: [String: BluetoothModule<C>.Status], values: [String: [String: String]]) async -> [String: AdvertisementState] {
        var states: [String: AdvertisementState] = [:]
        for (name, status) in statuses {
            states[name] = state(status)
            states[name]!.values = values[name] ?? [:]
        }
        for component in components { states = await component.contribute(to: states) }
        return states
    }

    /// The control API's view of one registration's status, an advertisement's or the GATT
    /// application's.
    func state(_ status: BluetoothModule<C>.Status) -> AdvertisementState {
        let now = clock.now
        var state = AdvertisementState(
            desired: status.desired, state: .off, sinceSeconds: status.since.duration(to: now).inSeconds,
            error: status.lastError?.message, errorCode: status.lastError?.code.rawValue, ignored: status.ignored,
            mismatch: status.mismatch)
        switch status.phase {
        case .on(let id, let adapter):
            state.state = .on
            state.id = id.rawValue
            state.adapter = adapter
            state.adapterAddress = status.adapterAddress
        case .off: state.state = .off
        case .waiting: state.state = .waiting
        case .paused(let adapter):
            state.state = .paused
            state.adapter = adapter
            state.adapterAddress = status.adapterAddress
            state.error = "a central is connected on \(adapter)" + (status.lastError.map { " (\($0.message))" } ?? "")
        case .failed: state.state = .failed
        case .retrying(let at, _):
            state.state = .retrying
            state.retryInSeconds = max(0, now.duration(to: at).inSeconds)
        }
        return state
    }

    /// The control API's view of the services: each is where the application is (`status`).
    func serviceStates(_ status: BluetoothModule<C>.Status?) async -> [String: AdvertisementState] {
        guard let status else { return [:] }
        var state = state(status)
        state.kind = .service
        return await values.serviceValues.mapValues { shown in
            var service = state
            service.values = shown.all
            return service
        }
    }

    // MARK: Helpers

    private func each(_ names: [String], _ body: (String) async throws(PeripheralError) -> Void) async throws(PeripheralError) {
        // Each name once, in the order given: a name repeated is one request, not one error each.
        var seen: Set<String> = []
        let known = await values.names
        let services = await values.serviceNames
        let targets = (names.isEmpty ? known : names).filter { seen.insert($0).inserted }
        let entries = Set(known)
        // All known, or nothing is done: the caller learns every name it got wrong at once.
        if let service = targets.first(where: { !entries.contains($0) && services.contains($0) }) {
            throw PeripheralError(.unknownName, "\(PeripheralError.quoted(service)) is a GATT service: services stay registered while bleadvd runs, and on and off are for advertisements")
        }
        let unknown = targets.filter { !entries.contains($0) }
        if !unknown.isEmpty { throw PeripheralError.unknownNames(unknown) }
        var failures: [(String, PeripheralError)] = []
        for name in targets {
            do {
                try await body(name)
            } catch {
                failures.append((name, error))
            }
        }
        guard let first = failures.first else { return }
        // At most a few failures in full: the reply stays small however many names failed.
        let shown = failures.prefix(3).map { "\($0.0): \($0.1.message)" }.joined(separator: "; ")
        throw PeripheralError(first.1.code, shown + (failures.count > 3 ? "; and \(failures.count - 3) more" : ""))
    }
}

/// It takes no BlueZ event; its work is following subscribers.
extension Advertising: DaemonComponent {
    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<Never> { .pass }

    func take(_ input: Never) async {}

    /// Follows each subscriber, a child of its task group, until it leaves the bus; returns when
    /// cancelled.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await name in subscribers {
                group.addTask { [announcements] in await announcements.follow(name) }
            }
        }
    }
}

// MARK: StackControl

extension Advertising: StackControl {
    package func unanswered() async -> UnansweredCall? {
        await module.unanswered()
    }
}
