import AdvertiserConfig
import BluetoothModule
import Peripheral

/// Where a component shows what it owns: its service's values and its advertisement, and
/// whether they are offered on air at all (Improv's while this machine has no Wi-Fi).
protocol Showing: AnyObject, Sendable {
    /// `name`'s characteristics take `values`, each at once and in this order (so that a client
    /// waiting for one of them is notified even of a value it had before), and its
    /// advertisement takes `advertisement`.
    func show(_ name: String, _ values: [(characteristic: String, bytes: [UInt8])], advertisement: ConfiguredAdvertisement) async
    /// `name`'s service and advertisement go on air (`withheld` nil), the service starting afresh
    /// from `fresh` when given, or leave it, `withheld` saying why (what `bleadvctl on` answers
    /// for it meanwhile).
    func offer(_ name: String, withheld: String?, fresh: ConfiguredService?) async
    /// Records whether `name` is offered, changing nothing on air: a reload that is under way
    /// serves the application and turns on what is offered once the config is in.
    func mark(_ name: String, withheld: String?) async
}

/// What of the config is on air, the components' showing port: every advertisement and service
/// the config names but those a component withholds, and the GATT application assembled from
/// the services offered. The daemon asks it what may go on air; a component's offer takes its
/// service and advertisement on or off through Values and the module.
actor Stage<C: Clock>: Showing where C.Duration == Duration {
    let values: Values<C>
    let module: BluetoothModule<C>
    /// The names withheld from the air, each with why.
    var withheld: [String: String]
    /// The names whose values a component owns (Improv's state), each with why no one sets them.
    let owned: [String: String]
    /// The components, each of which may add its share to the application served.
    let components: [any DaemonComponent]

    /// A stage over `values` and `module`, `withheld` (by name, with why) until their components
    /// offer them, `owned` (by name, with why) by their components, serving the application
    /// with the share of each of `components`, running on `executor`.
    init(
        values: Values<C>, module: BluetoothModule<C>, withheld: [String: String], owned: [String: String],
        components: [any DaemonComponent], executor: any SerialExecutor
    ) {
        self.components = components
        self.values = values
        self.module = module
        self.withheld = withheld
        self.owned = owned
        self.executor = executor
    }

    nonisolated let executor: any SerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Whether what `name` configures may be on air.
    func isOffered(_ name: String) -> Bool {
        withheld[name] == nil
    }

    /// Why `name` may not go on air now; nil when it may.
    func refusal(_ name: String) -> String? {
        withheld[name]
    }

    /// Why `name`'s values may not be set from outside (a component owns them); nil when they
    /// may, or `name` is not configured (which `set` says itself).
    func setRefusal(_ name: String) async -> String? {
        guard let reason = owned[name] else { return nil }
        let services = await values.serviceNames
        let advertisements = await values.names
        return services.contains(name) || advertisements.contains(name) ? reason : nil
    }

    /// The services offered as one application, in name order, with each component's share
    /// in it (``DaemonComponent/contribute(to:)-(GATTApplication)``: the read programs' handlers);
    /// nil when there are none.
    func application() async -> GATTApplication? {
        let withheld = withheld
        guard var application = await values.application(offering: { withheld[$0] == nil }) else { return nil }
        for component in components { application = await component.contribute(to: application) }
        return application
    }

    func show(_ name: String, _ shown: [(characteristic: String, bytes: [UInt8])], advertisement: ConfiguredAdvertisement) async {
        await values.show(name, shown, advertisement: advertisement)
    }

    func offer(_ name: String, withheld reason: String?, fresh: ConfiguredService?) async {
        withheld[name] = reason
        if let fresh { await values.replace(name, with: fresh) }
        if reason == nil {
            await module.serve(await application())
            try? await module.on(name)
        } else {
            try? await module.off(name)
            await module.serve(await application())
        }
    }

    func mark(_ name: String, withheld reason: String?) {
        withheld[name] = reason
    }
}
