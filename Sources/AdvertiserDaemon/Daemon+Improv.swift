import AdvertiserConfig
import BluetoothModule
package import Peripheral

/// Improv's part in the daemon: the daemon is the provisioner's showing port (Improv's service
/// and advertisement are the daemon's to assemble and send), and routes the control API's
/// `improv authorize` to it (``ImprovProvisioner``). Its joiners are the bus's
/// (``ControlBus/joiner(for:clock:)``) unless one is injected.
extension Daemon: ImprovShowing {
    /// The characteristic Improv's clients write their commands to.
    static var improvCommand: GATTCharacteristicID { GATTCharacteristicID(service: ImprovConfig.name, characteristic: "command") }

    /// What centrals send Improv, in order: a frame (or part of one) written to its command
    /// characteristic, a read of one of its characteristics (the central uses Improv: a person
    /// may authorize it), the end of a central's link (which drops its partial frame), or of
    /// every link (bluetoothd left, an adapter went).
    enum ImprovInput: Sendable {
        case frame([UInt8], central: String)
        case read(central: String)
        case left(String)
        case linksEnded
    }

    /// How many of those wait for Improv at most (a few hundred KiB): Improv answers through
    /// the module, whose turn with BlueZ a slow bluetoothd can hold for seconds; what comes
    /// beyond it is dropped (a client waits for each answer: only a flood comes near it).
    static var improvBacklog: Int { 1024 }

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
