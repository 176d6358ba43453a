#if canImport(Glibc)
import Glibc
#endif
import AdvertiserConfig
import BluetoothModule
import DBus
package import Peripheral

/// Improv's part in the daemon: the daemon is the provisioner's showing port (Improv's service
/// and advertisement are the daemon's to assemble and send), builds its joiners, and routes the
/// control API's `improv authorize` to it (``ImprovProvisioner``).
extension Daemon: ImprovShowing {
    /// The characteristic Improv's clients write their commands to.
    static var improvCommand: GATTCharacteristicID { GATTCharacteristicID(service: ImprovConfig.name, characteristic: "command") }

    /// `bleadvctl improv authorize`: a person allows provisioning for the configured time.
    package func improvAuthorize() async throws(PeripheralError) -> Int {
        try await improv.authorize()
    }

    func showImprov(_ shown: [(characteristic: String, bytes: [UInt8])], advertisement: ConfiguredAdvertisement) async {
        await values.show(ImprovConfig.name, shown, advertisement: advertisement)
    }

    func offerImprov(_ offered: Bool, fresh: ConfiguredService?) async {
        let name = ImprovConfig.name
        improvOffered = offered
        if let fresh { await values.replace(name, with: fresh) }
        if offered {
            await module.serve(await application())
            try? await module.on(name)
        } else {
            try? await module.off(name)
            await module.serve(await application())
        }
    }

    /// What joins networks for `config`: the one injected, or the config's. Through
    /// NetworkManager, bleadvd running as its own user asks the join helper, which runs as root
    /// (``JoinHelper``); run as root itself, it asks NetworkManager.
    static func joiners(injected: (any NetworkJoining)?, connection: DBusConnection, clock: C) -> @Sendable (ImprovConfig) -> any NetworkJoining {
        { config in
            if let injected { return injected }
            switch config.joiner {
            case .networkManager where geteuid() != 0: return HelperJoiner(connection: connection, clock: clock)
            case .networkManager: return NetworkManagerJoiner(connection: connection, clock: clock)
            case .program(let program): return ProgramJoiner(program: program, clock: clock)
            }
        }
    }
}
