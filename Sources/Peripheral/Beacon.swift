/// Beacon presets: each builds an ``Advertisement`` whose AD structures have the published
/// layout, discoverable so that Flags `02 01 06` go with it as the layouts expect (BlueZ places
/// them after its other structures; scanners match on the structures, not their order).
public enum Beacon: Hashable, Sendable {
    /// Apple iBeacon: company 0x004C, `02 15`, proximity UUID, major and minor (big endian),
    /// measured power at 1 m (signed dBm).
    case iBeacon(uuid: BluetoothUUID, major: UInt16, minor: UInt16, measuredPower: Int8)
    /// AltBeacon: the maker's company id, `BE AC`, a 20-byte beacon id, reference RSSI and a
    /// reserved byte.
    case altBeacon(manufacturerID: UInt16, beaconID: [UInt8], referenceRSSI: Int8, reserved: UInt8 = 0)
    /// Eddystone-UID: service FEAA, frame `00`, TX power at 0 m, 10-byte namespace, 6-byte instance.
    case eddystoneUID(namespace: [UInt8], instance: [UInt8], txPower: Int8)
    /// Eddystone-URL: service FEAA, frame `10`, TX power at 0 m, the URL compressed per the spec.
    case eddystoneURL(url: String, txPower: Int8)
    /// Eddystone-TLM: service FEAA, frame `20`, the beacon's telemetry (its counters as given;
    /// the daemon brings them up to date while it is on air).
    case eddystoneTLM(EddystoneTLM)

    /// The Eddystone service UUID, FEAA.
    public static let eddystoneService = BluetoothUUID(0xFEAA)
    /// Apple's company identifier.
    public static let appleCompanyID: UInt16 = 0x004C

    /// The byte fields of fixed length, by the config's name for them (`preset.key`).
    public static let byteLengths = ["altbeacon.beacon_id": 20, "eddystone_uid.namespace": 10, "eddystone_uid.instance": 6]

    /// What is wrong with `bytes` as the byte field `field` (a key of ``byteLengths``), or nil
    /// when they have its length: the one check of each length, which the config reader uses
    /// to name the key, and ``advertisement()`` to never build a wrong layout.
    public static func lengthProblem(_ field: String, _ bytes: [UInt8]) -> String? {
        guard let length = byteLengths[field], bytes.count != length else { return nil }
        return "is \(bytes.count) bytes; it must be \(length)"
    }

    /// The advertisement that carries this beacon.
    /// - Throws: ``PeripheralError`` (`invalidValue`) naming the preset field that is wrong.
    public func advertisement() throws(PeripheralError) -> Advertisement {
        switch self {
        case .iBeacon(let uuid, let major, let minor, let measuredPower):
            let payload: [UInt8] = [0x02, 0x15] + uuid.bytes + Self.bigEndian(major) + Self.bigEndian(minor)
                + [UInt8(bitPattern: measuredPower)]
            return Self.beacon(manufacturer: Advertisement.ManufacturerData(companyID: Self.appleCompanyID, data: payload))
        case .altBeacon(let manufacturerID, let beaconID, let referenceRSSI, let reserved):
            try Self.check("altbeacon.beacon_id", beaconID)
            return Self.beacon(manufacturer: Advertisement.ManufacturerData(
                companyID: manufacturerID, data: [0xBE, 0xAC] + beaconID + [UInt8(bitPattern: referenceRSSI), reserved]))
        case .eddystoneUID(let namespace, let instance, let txPower):
            try Self.check("eddystone_uid.namespace", namespace)
            try Self.check("eddystone_uid.instance", instance)
            return Self.eddystone([0x00, UInt8(bitPattern: txPower)] + namespace + instance + [0x00, 0x00])
        case .eddystoneURL(let url, let txPower):
            return Self.eddystone([0x10, UInt8(bitPattern: txPower)] + (try EddystoneURL.encode(url)))
        case .eddystoneTLM(let telemetry):
            if let temperature = telemetry.temperature, let problem = EddystoneTLM.temperatureProblem(temperature) {
                throw PeripheralError(.invalidValue, "eddystone_tlm temperature " + problem)
            }
            return Self.eddystone(telemetry.frame)
        }
    }

    private static func check(_ field: String, _ bytes: [UInt8]) throws(PeripheralError) {
        if let problem = lengthProblem(field, bytes) {
            throw PeripheralError(.invalidValue, field.split(separator: ".").joined(separator: " ") + " " + problem)
        }
    }

    private static func beacon(manufacturer: Advertisement.ManufacturerData) -> Advertisement {
        Advertisement(kind: .peripheral, manufacturerData: [manufacturer], discoverable: true)
    }

    private static func eddystone(_ frame: [UInt8]) -> Advertisement {
        Advertisement(
            kind: .peripheral, serviceUUIDs: [eddystoneService],
            serviceData: [Advertisement.ServiceData(uuid: eddystoneService, data: frame)], discoverable: true)
    }

    static func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
}

/// The Eddystone-URL compression: a scheme prefix byte and expansion codes for common endings.
public enum EddystoneURL {
    /// The scheme prefixes, by code.
    public static let schemes = ["http://www.", "https://www.", "http://", "https://"]
    /// The expansion codes 0x00-0x0D, by code.
    public static let expansions = [
        ".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/", ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov",
    ]
    /// The most encoded bytes after the scheme that fit a frame.
    public static let maximumLength = 17

    /// The scheme byte and the compressed rest of the URL.
    /// - Throws: ``PeripheralError`` (`invalidValue`) when the scheme is not one of the four, a
    ///   character cannot be sent, or the result is over 17 bytes.
    public static func encode(_ url: String) throws(PeripheralError) -> [UInt8] {
        guard let scheme = schemes.indices.first(where: { url.hasPrefix(schemes[$0]) }) else {
            throw PeripheralError(.invalidValue, "eddystone_url \"\(url)\" must start with http://, https://, http://www. or https://www.")
        }
        var rest = Array(url.utf8.dropFirst(schemes[scheme].utf8.count))
        var out: [UInt8] = [UInt8(scheme)]
        while !rest.isEmpty {
            if let code = expansions.indices.first(where: { rest.starts(with: expansions[$0].utf8) }) {
                out.append(UInt8(code))
                rest.removeFirst(expansions[code].utf8.count)
                continue
            }
            let byte = rest.removeFirst()
            guard byte > 0x20 && byte < 0x7F else {
                throw PeripheralError(.invalidValue, "eddystone_url \"\(url)\" has a character that cannot be sent (byte 0x\(Hex.encode([byte])))")
            }
            out.append(byte)
        }
        guard out.count - 1 <= maximumLength else {
            throw PeripheralError(
                .invalidValue, "eddystone_url \"\(url)\" encodes to \(out.count - 1) bytes; the frame holds \(maximumLength)")
        }
        return out
    }
}
