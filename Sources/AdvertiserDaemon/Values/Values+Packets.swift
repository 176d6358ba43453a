import AdvertiserConfig
import BluetoothModule
import Peripheral

/// What a component puts in an advertisement's packets beside the values in force (a BTHome
/// event, a TLM frame's counters): a change to the advertisement as configured, made each time
/// its packets are built. Values knows no more of it.
struct PacketShare: Sendable {
    /// Whether the packets must stay as they are while it is in them (a BTHome event's burst:
    /// a new packet id would report the event again): values set meanwhile go on air as it is
    /// taken out, and a reload that changes the advertisement takes it out.
    var holds: Bool
    /// What it changes of the advertisement as configured.
    var apply: @Sendable (inout ConfiguredAdvertisement) -> Void
}

/// Values as the port of the components that put something in an advertisement's packets.
extension Values {
    /// Advertisement `name` with the values in force; nil when the config names none.
    func configured(_ name: String) -> ConfiguredAdvertisement? {
        entries[name]?.values.live
    }

    /// The module's status of advertisement `name`; nil when it has none.
    func status(of name: String) async -> BluetoothModule<C>.Status? {
        await module.status()[.advertisement(name)]
    }

    /// Puts `share` in advertisement `name`'s packets at once, in place of what `owner` put there
    /// before, or takes `owner`'s out (`share` nil), with the values in force; `newPacket` gives
    /// them a new BTHome packet id. A share taken out lets the values set meanwhile go: they are
    /// announced (also when a reload had ended it).
    /// - Throws: `unknownName`, or what the module's update threw.
    func show(_ share: PacketShare?, of owner: String, in name: String, newPacket: Bool) async throws(PeripheralError) {
        guard entries[name] != nil else { throw PeripheralError.unknownName(name) }
        entries[name]!.shares[owner] = share
        if newPacket { entries[name]!.packetID &+= 1 }
        // The packets carry the values in force too: a sender running has nothing left to send.
        entries[name]!.values.markSent()
        do {
            try await module.update(name, to: entries[name]!.advertisement)
        } catch let error as PeripheralError {
            throw error
        } catch {
            throw PeripheralError(.failed, "\(error)")
        }
        if share == nil {
            await announcer?.announceValues(name, all: values(of: name), everyone: values(of: name, public: true))
        }
    }
}
