import DBus
import Logging
public import Peripheral

/// The self-check: what bluetoothd reports against what this manager holds, and the removal of
/// what it can name that nothing tracks.
extension BlueZPeripheralManager {
    /// Compares each adapter's `ActiveInstances` with the advertisements registered there, after
    /// removing what is ours and tracked by nothing: objects exported without a registration
    /// (unexported, and unregistered wherever BlueZ still had them) and registrations whose
    /// unregistering got no answer (unregistered again).
    public func audit() async throws -> [RegistrationAudit] {
        let generation = try await currentBluetoothd()
        var removed: [String: Int] = [:]
        let strays = await connection.exportedPaths.filter(untracked)
        if !strays.isEmpty {
            // Which adapter had such an object is not known: each is asked.
            let adapterNames = try await adapters().map(\.name)
            for path in strays {
                await connection.unexport(path)
                guard path.rawValue.hasPrefix(BlueZ.advertisementRoot.rawValue + "/") else { continue }
                for adapter in adapterNames where await unregisterStray(path, on: adapter, of: generation) {
                    removed[adapter, default: 0] += 1
                }
            }
        }
        for (path, registration) in retired {
            guard registration.generation == generation else {
                retired[path] = nil  // that bluetoothd is gone, and what it held with it
                continue
            }
            if await unregisterStray(path, on: registration.adapter, of: generation) {
                removed[registration.adapter, default: 0] += 1
            }
        }
        // Counted after the removals, from BlueZ's answer then.
        return try await adapters().map { adapter in
            let held = exports.filter { $0.value.advertisement != nil && $0.value.adapter == adapter.name && $0.value.generation == generation }
                .map { RegistrationID($0.key.rawValue, generation: generation) }
            return RegistrationAudit(
                adapter: adapter.name, registered: adapter.activeInstances, held: Set(held),
                straysRemoved: removed[adapter.name] ?? 0)
        }
    }

    /// Whether `path` is one of ours that no registration, finished or under way, accounts for.
    private func untracked(_ path: DBusObjectPath) -> Bool {
        let text = path.rawValue
        guard [BlueZ.advertisementRoot, BlueZ.applicationRoot].contains(where: { text.hasPrefix($0.rawValue + "/") }) else {
            return false
        }
        return !(Array(exports.keys) + registering).contains { root in
            text == root.rawValue || text.hasPrefix(root.rawValue + "/")
        }
    }

    /// Asks `generation` to unregister `path` from `adapter`; true when it had it. A definite
    /// answer either way retires the path for good.
    private func unregisterStray(_ path: DBusObjectPath, on adapter: String, of generation: StackGeneration) async -> Bool {
        do {
            _ = try await callBlueZ(
                on: generation, path: try BlueZ.adapterPath(adapter), .unregisterAdvertisement, [.objectPath(path)], expecting: .empty)
            retired[path] = nil
            logger.warning("\(path.rawValue) was still registered on \(adapter) though nothing tracked it; unregistered")
            return true
        } catch let error as PeripheralError where error.code == .notRegistered || error.code == .noAdapter {
            retired[path] = nil
            return false
        } catch {
            return false
        }
    }
}
