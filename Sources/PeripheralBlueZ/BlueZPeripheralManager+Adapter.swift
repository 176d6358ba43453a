import DBus
import Logging
public import Peripheral

/// The adapters: those that can advertise, their power and their alias; the events that follow
/// them are in +Events.
extension BlueZPeripheralManager: AdapterManaging {
    /// The adapters that can advertise (those with `LEAdvertisingManager1`), from BlueZ's
    /// `GetManagedObjects`, sorted by name.
    /// Each one's release is kept, for its GATT applications (+Sockets).
    public func adapters() async throws -> [AdapterCapabilities] {
        let generation = try await currentBluetoothd()
        let reply = try await callBlueZ(on: generation,
            path: BlueZ.root, .getManagedObjects,
            expecting: BlueZ.managedObjectsSignature)
        let adapters = AdapterCapabilities.fromManagedObjects(reply[0])
        for adapter in adapters { releases[adapter.name] = (generation, adapter.release) }
        return adapters
    }

    /// Sets the adapter's `Powered` property.
    public func powerOn(adapter: String) async throws {
        _ = try await callBlueZ(on: try await currentBluetoothd(),
            path: try BlueZ.adapterPath(adapter), .setProperty,
            [.string(BlueZ.adapterInterface), .string("Powered"), .variant(.boolean(true))], about: .adapter)
        logger.info("powered \(adapter) on")
    }

    /// Sets `Adapter1.Alias` (bluetoothd stores it, and sets the controller's local name); an
    /// empty one puts the system's name back.
    public func setAlias(_ alias: String, adapter: String) async throws {
        _ = try await callBlueZ(
            on: try await currentBluetoothd(), path: try BlueZ.adapterPath(adapter), .setProperty,
            [.string(BlueZ.adapterInterface), .string("Alias"), .variant(.string(alias))], about: .adapter)
    }
}
