import AdvertiserConfig
import Logging
import Peripheral

/// The name a central is shown once connected (`alias`, BlueZ's `Adapter1.Alias`, which GAP's
/// Device Name serves), a component of the daemon: it sets it on the adapter bleadvd advertises
/// on whenever that adapter appears or powers on, and puts back what was there before when
/// bleadvd stops or a reload drops the key. What it must put back is kept in the state
/// directory before the alias is set: a bleadvd killed meanwhile puts it back at its next stop.
/// The alias is the adapter's, for every program that uses it (and bluetoothd keeps it across
/// its restarts); bleadvd sets it, never watches it.
actor AdapterAlias: DaemonComponent {
    let manager: any AdapterManaging
    let record: AliasRecord
    let logger: Logger
    nonisolated let executor: any SerialExecutor
    /// The alias the config asks for; nil for none.
    private(set) var wanted: String?
    /// The adapter the config names; nil for the first.
    let choice: AdapterChoice?

    init(alias: String?, adapter: String?, manager: any AdapterManaging, stateDirectory: String?, logger: Logger, executor: any SerialExecutor) {
        wanted = alias
        choice = adapter.map(AdapterChoice.init)
        self.manager = manager
        record = AliasRecord(directory: stateDirectory)
        self.logger = logger
        self.executor = executor
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    // MARK: DaemonComponent

    /// An adapter or BlueZ came, or an adapter powered on: the alias is set again if it is not there.
    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<Void> {
        switch event {
        case .bluezAppeared, .adapterAdded, .adapterPowered(_, true, _): .inTurn(())
        default: .pass
        }
    }

    /// Events come in bursts (an adapter added, then powered): the ones that wait are one.
    nonisolated var backlog: Int? { 1 }
    nonisolated func dropped(_ input: Void) -> String { "alias: an adapter event was merged with the one waiting" }

    func take(_ input: Void) async {
        await apply()
    }

    /// Sets the alias once as bleadvd starts: BlueZ and the adapter are usually there already,
    /// and say nothing new.
    func run() async {
        await apply()
    }

    // MARK: Work

    /// Sets the alias on the adapter in use where it is not set, keeping what to put back first.
    func apply() async {
        guard let wanted else { return await putBack() }
        guard let adapter = await adapterInUse(), let address = adapter.address, adapter.alias != wanted else { return }
        do {
            var originals = try record.originals()
            if originals[address] == nil {
                // No alias of its own (it shows the system's name): put back by clearing it.
                originals[address] = adapter.alias == adapter.systemName ? "" : adapter.alias ?? ""
                try record.store(originals)
            }
            try await manager.setAlias(wanted, adapter: adapter.name)
            let was = originals[address]!.isEmpty ? "the system's name \(Untrusted.quoted(adapter.systemName ?? ""))" : Untrusted.quoted(originals[address]!)
            logger.notice("\(adapter.name): alias \(Untrusted.quoted(wanted)), the name centrals are shown once connected (was \(was); put back when bleadvd stops)")
        } catch {
            logger.warning("\(adapter.name): the alias \(Untrusted.quoted(wanted)) was not set: \(error)")
        }
    }

    /// Puts back the alias of every adapter it set one on that is present, and forgets them.
    func putBack() async {
        let originals: [String: String]
        do {
            originals = try record.originals()
        } catch {
            return logger.warning("\(error)")
        }
        guard !originals.isEmpty, let adapters = try? await manager.adapters() else { return }
        var left = originals
        for adapter in adapters {
            guard let address = adapter.address, let original = originals[address] else { continue }
            do {
                try await manager.setAlias(original, adapter: adapter.name)
                left[address] = nil
                logger.notice("\(adapter.name): alias put back to \(original.isEmpty ? "the system's name" : Untrusted.quoted(original))")
            } catch {
                logger.warning("\(adapter.name): the alias could not be put back: \(error)")
            }
        }
        do {
            try record.store(left)
        } catch {
            logger.warning("\(error)")
        }
    }

    /// Its part of a reloaded config: `alias`.
    func reconfigure(from config: DaemonConfig) async {
        await reconfigure(config.alias)
    }

    /// A reload's `alias`: set at once, or put back when the file no longer has one.
    func reconfigure(_ alias: String?) async {
        wanted = alias
        await apply()
    }

    /// The adapter bleadvd advertises on: the one the config names, else the first by name.
    private func adapterInUse() async -> AdapterCapabilities? {
        guard let adapters = try? await manager.adapters() else { return nil }
        if let choice { return adapters.first(where: choice.matches) }
        return adapters.min { $0.name < $1.name }
    }
}
