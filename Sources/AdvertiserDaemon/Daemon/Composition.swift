import AdvertiserConfig
import BluetoothModule
import Logging
import Peripheral

/// What bleadvd is made of: the one place that names its features. Each is a
/// ``DaemonComponent`` made here with the ports it reports through; the daemon loops over the
/// list, and a feature is added here, not in the daemon.
struct Composition<C: Clock>: Sendable where C.Duration == Duration {
    /// What the process hands the features: the config, BlueZ's manager, the bus, the clock,
    /// the journal, and the daemon's own parts (the module, Values).
    struct Parts: Sendable {
        var config: DaemonConfig
        var configPath: String
        /// bleadvd's `--adapter`, which overrides the config's.
        var adapter: String?
        var manager: any PeripheralManaging
        var bus: any ControlBus
        var clock: C
        var logger: Logger
        var module: BluetoothModule<C>
        var values: Values<C>
        /// Where the bonds that pairing windows make are recorded (the state directory).
        var bondRecord: BondRecord?
        /// Joins the Wi-Fi networks Improv is given; nil for the bus's (`[improv] join`).
        var joiner: (any NetworkJoining)?
    }

    /// The components, in the order BlueZ's events reach them: Improv first (its command's
    /// frames are its alone), then what centrals write to the value in force, then advertising,
    /// then the rest.
    let components: [any DaemonComponent]
    /// What of the config is on air, and the GATT application assembled from it.
    let stage: Stage<C>
    /// Connects the components that call each other, once, before anything is served.
    let connect: @Sendable () async -> Void

    init(_ parts: Parts) {
        let (config, values, module, executor) = (parts.config, parts.values, parts.module, parts.bus.eventLoop)
        let adapter = parts.adapter ?? config.adapter
        let improv = ImprovProvisioner(
            config: config.improv, configPath: parts.configPath, clock: parts.clock, logger: parts.logger, executor: executor,
            joiners: { [joiner = parts.joiner, bus = parts.bus, clock = parts.clock] config in joiner ?? bus.joiner(for: config, clock: clock) })
        let reads = ReadAnswers(services: config.services, port: values, clock: parts.clock, logger: parts.logger, executor: executor)
        let pairing = Pairing(
            config: config.pairing, bondNeeded: Pairing<C>.bondNeeded(config.services.values), configPath: parts.configPath, module: module,
            clock: parts.clock, announcer: parts.bus, bondRecord: parts.bondRecord, logger: parts.logger, executor: executor)
        let alias = AdapterAlias(
            alias: config.alias, adapter: adapter, manager: parts.manager, stateDirectory: parts.bondRecord?.directory, logger: parts.logger,
            executor: executor)
        let centrals = Centrals(
            config: config.centrals, manager: parts.manager, port: parts.bus, clock: parts.clock, logger: parts.logger, executor: executor,
            owners: { [bondRecord = parts.bondRecord] in Set((try? bondRecord?.centrals()) ?? []) })
        let events = BTHomeEvents(port: values, clock: parts.clock, logger: parts.logger, executor: executor)
        let telemetry = Telemetry(
            advertisements: config.advertisements, port: values, clock: parts.clock, uptime: Telemetry<C>.systemUptime(), logger: parts.logger,
            executor: executor)
        let rotation = Rotation(config: config, port: module, clock: parts.clock, logger: parts.logger, executor: executor)
        components = [improv, values, reads, module, pairing, alias, centrals, events, telemetry, rotation]
        stage = Stage(
            values: values, module: module, withheld: ImprovProvisioner<C>.withheldAtStart, owned: ImprovProvisioner<C>.owned,
            components: components, executor: executor)
        connect = { await values.watchSends(by: centrals) }
    }
}
