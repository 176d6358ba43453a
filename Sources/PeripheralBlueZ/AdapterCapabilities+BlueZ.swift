package import DBus
package import Peripheral

extension AdapterCapabilities {
    /// The adapters in a `GetManagedObjects` reply from BlueZ that can advertise (those with an
    /// `LEAdvertisingManager1`), sorted by name. Properties of the wrong type are ignored, as if
    /// absent, rather than trusted.
    package static func fromManagedObjects(_ reply: DBusValue) -> [AdapterCapabilities] {
        guard let objects = reply.dictionaryEntries else { return [] }
        var adapters: [AdapterCapabilities] = []
        for object in objects {
            guard let path = object.key.objectPath, let name = BlueZ.adapterName(of: path),
                  let interfaces = object.value.dictionaryEntries else { continue }
            var byName: [String: [String: DBusValue]] = [:]
            for interface in interfaces {
                if let interfaceName = interface.key.string {
                    byName[interfaceName] = interface.value.variantDictionary ?? [:]
                }
            }
            guard let adapter = byName[BlueZ.adapterInterface],
                  let manager = byName[BlueZ.advertisingManagerInterface] else { continue }
            adapters.append(AdapterCapabilities(name: name, adapter: adapter, advertisingManager: manager))
        }
        return adapters.sorted { $0.name < $1.name }
    }

    /// Capabilities from an adapter's `Adapter1` and `LEAdvertisingManager1` properties.
    package init(name: String, adapter: [String: DBusValue], advertisingManager manager: [String: DBusValue]) {
        let capabilities = manager["SupportedCapabilities"]?.variantDictionary ?? [:]
        let power = (capabilities["MinTxPower"]?.int16, capabilities["MaxTxPower"]?.int16)
        self.init(
            name: name,
            address: adapter["Address"]?.string,
            powered: adapter["Powered"]?.boolean ?? false,
            freeInstances: Int(manager["SupportedInstances"]?.byte ?? 0),
            activeInstances: Int(manager["ActiveInstances"]?.byte ?? 0),
            includes: Set((manager["SupportedIncludes"]?.stringArray ?? []).compactMap(Advertisement.Include.init)),
            secondaryChannels: Set(
                (manager["SupportedSecondaryChannels"]?.stringArray ?? []).compactMap(Advertisement.SecondaryChannel.init)),
            maxAdvertisingLength: capabilities["MaxAdvLen"]?.byte.map(Int.init),
            txPowerRange: power.0.flatMap { low in power.1.flatMap { high in low <= high ? low...high : nil } },
            actsOnParameters: manager["SupportedCapabilities"] != nil,
            alias: adapter["Alias"]?.string, systemName: adapter["Name"]?.string,
            release: StackRelease(adapterProperties: adapter.keys))
    }
}
