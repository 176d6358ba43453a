package import DBus
package import Peripheral

extension Advertisement {
    /// The properties BlueZ reads for this advertisement (5.66's, and 5.80's scan response): exactly those that are set, each
    /// with the signature BlueZ's parser expects (a wrong type is "Failed to parse advertisement.").
    package var bluezProperties: [String: DBusValue] {
        var properties: [String: DBusValue] = ["Type": .string(kind.rawValue)]
        if !serviceUUIDs.isEmpty { properties["ServiceUUIDs"] = .strings(serviceUUIDs.map(\.uuidString)) }
        if !solicitUUIDs.isEmpty { properties["SolicitUUIDs"] = .strings(solicitUUIDs.map(\.uuidString)) }
        if !manufacturerData.isEmpty {
            properties["ManufacturerData"] = .dictionary(key: .uint16, value: .variant, manufacturerData.map {
                DBusDictEntry(.uint16($0.companyID), .variant(.bytes($0.data)))
            })
        }
        if !serviceData.isEmpty {
            properties["ServiceData"] = .dictionary(key: .string, value: .variant, serviceData.map {
                DBusDictEntry(.string($0.uuid.uuidString), .variant(.bytes($0.data)))
            })
        }
        if !data.isEmpty {
            properties["Data"] = .dictionary(key: .byte, value: .variant, data.map {
                DBusDictEntry(.byte($0.type), .variant(.bytes($0.data)))
            })
        }
        let response = scanResponse
        if !response.serviceUUIDs.isEmpty { properties["ScanResponseServiceUUIDs"] = .strings(response.serviceUUIDs.map(\.uuidString)) }
        if !response.solicitUUIDs.isEmpty { properties["ScanResponseSolicitUUIDs"] = .strings(response.solicitUUIDs.map(\.uuidString)) }
        if !response.manufacturerData.isEmpty {
            properties["ScanResponseManufacturerData"] = .dictionary(key: .uint16, value: .variant, response.manufacturerData.map {
                DBusDictEntry(.uint16($0.companyID), .variant(.bytes($0.data)))
            })
        }
        if !response.serviceData.isEmpty {
            properties["ScanResponseServiceData"] = .dictionary(key: .string, value: .variant, response.serviceData.map {
                DBusDictEntry(.string($0.uuid.uuidString), .variant(.bytes($0.data)))
            })
        }
        if !response.data.isEmpty {
            properties["ScanResponseData"] = .dictionary(key: .byte, value: .variant, response.data.map {
                DBusDictEntry(.byte($0.type), .variant(.bytes($0.data)))
            })
        }
        if let discoverable { properties["Discoverable"] = .boolean(discoverable) }
        if let discoverableTimeout { properties["DiscoverableTimeout"] = .uint16(discoverableTimeout) }
        if !includes.isEmpty { properties["Includes"] = .strings(includes.sorted().map(\.rawValue)) }
        if let localName { properties["LocalName"] = .string(localName) }
        if let appearance { properties["Appearance"] = .uint16(appearance) }
        if let duration { properties["Duration"] = .uint16(duration) }
        if let timeout { properties["Timeout"] = .uint16(timeout) }
        if let secondaryChannel { properties["SecondaryChannel"] = .string(secondaryChannel.rawValue) }
        if let minInterval { properties["MinInterval"] = .uint32(minInterval) }
        if let maxInterval { properties["MaxInterval"] = .uint32(maxInterval) }
        if let txPower { properties["TxPower"] = .int16(txPower) }
        return properties
    }
}
