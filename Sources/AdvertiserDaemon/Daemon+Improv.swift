import AdvertiserConfig
import BluetoothModule
package import Peripheral

/// Improv's part in the daemon: the daemon is the provisioner's showing port (Improv's service
/// and advertisement are the daemon's to assemble and send), and routes the control API's
/// `improv authorize` to it (``ImprovProvisioner``; what of BlueZ's events it takes, its
/// ``ImprovProvisioner/delivery(of:)``). Its joiners are the bus's
/// (``ControlBus/joiner(for:clock:)``) unless one is injected.
extension Daemon: ImprovShowing {
    /// `bleadvctl improv authorize [ADDRESS]`: a person allows one connected central to
    /// provision for the configured time.
    package func improvAuthorize(_ central: String) async throws(PeripheralError) -> (seconds: Int, central: String) {
        try await improv.authorize(central)
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
}
