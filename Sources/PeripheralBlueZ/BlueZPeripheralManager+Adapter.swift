import DBus
import Logging
public import Peripheral

/// The adapters: those that can advertise, their power and their alias; the events that follow
/// them are in +Events.
extension BlueZPeripheralManager: AdapterManaging {
    /// The adapters that can advertise (those with `LEAdvertisingManager1`), from BlueZ's
    /// `GetManagedObjects`, sorted by name.
    public func adapters() async throws -> [AdapterCapabilities] {
        let reply = try await callBlueZ(on: try await currentBluetoothd(),
            path: BlueZ.root, .getManagedObjects,
            expecting: BlueZ.managedObjectsSignature)
        return AdapterCapabilities.fromManagedObjects(reply[0])
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
