/// One AD structure on air: `length, type, data`, and the advertisement field it comes from.
public struct ADStructure: Hashable, Sendable {
    /// The AD type, e.g. 0xFF for manufacturer data.
    public var type: UInt8
    /// The data after the type byte.
    public var data: [UInt8]
    /// The field it comes from, named as in the config file: `manufacturer_data 0x004C`.
    public var field: String

    /// A structure.
    public init(type: UInt8, data: [UInt8], field: String) {
        self.type = type
        self.data = data
        self.field = field
    }

    /// Bytes on air: the length byte, the type and the data.
    public var size: Int { 2 + data.count }

    /// The structure as it goes on air.
    public var bytes: [UInt8] { [UInt8(truncatingIfNeeded: 1 + data.count), type] + data }
}

/// The bytes BlueZ 5.66 and the kernel put on air for an advertisement in legacy PDUs: the
/// advertising data and the scan response, each a list of AD structures within 31 bytes.
///
/// Order, as BlueZ's `bt_ad_generate` and the kernel build it (checked with btmon in the test
/// bed): service UUIDs, solicit UUIDs, manufacturer data, service data, appearance, raw data,
/// Flags (only when discoverable; BlueZ keeps them with the raw data), then the TX power the
/// kernel appends. The local name goes in the scan response, shortened if needed.
public struct AdvertisingPayload: Hashable, Sendable {
    /// The legacy PDU limit BlueZ 5.66 applies to each payload.
    public static let limit = 31
    /// The most advertising data one extended advertisement carries through BlueZ and the
    /// kernel (`HCI_MAX_EXT_AD_LENGTH`); an adapter's own figure is its `MaxAdvLen`.
    public static let extendedLimit = 251

    /// The advertising data's structures, in order.
    public var advertisingData: [ADStructure]
    /// The scan response's structures, in order.
    public var scanResponse: [ADStructure]

    /// The advertising data as it goes on air.
    public var advertisingBytes: [UInt8] { advertisingData.flatMap(\.bytes) }
    /// The scan response as it goes on air.
    public var scanResponseBytes: [UInt8] { scanResponse.flatMap(\.bytes) }
    /// Bytes the advertising data uses.
    public var advertisingSize: Int { advertisingData.reduce(0) { $0 + $1.size } }
    /// Bytes the scan response uses.
    public var scanResponseSize: Int { scanResponse.reduce(0) { $0 + $1.size } }

    /// The payload of an advertisement. What the adapter fills in itself is given here:
    /// its name (for `includes = ["local-name"]`), appearance and TX power.
    public init(for ad: Advertisement, adapterName: String = "BlueZ", adapterAppearance: UInt16 = 0, adapterTxPower: Int8 = 0) {
        var adv = Self.listed(
            ad.serviceUUIDs, ad.solicitUUIDs, ad.manufacturerData, ad.serviceData, prefix: "")
        if let appearance = ad.appearance ?? (ad.includes.contains(.appearance) ? adapterAppearance : nil) {
            let field = ad.appearance != nil ? "appearance" : "includes appearance"
            adv.append(ADStructure(type: ADType.appearance, data: [UInt8(appearance & 0xFF), UInt8(appearance >> 8)], field: field))
        }
        adv += Self.raw(ad.data, prefix: "")
        if let flags = Self.flags(for: ad) {
            adv.append(ADStructure(type: ADType.flags, data: [flags], field: "discoverable"))
        }
        if ad.includes.contains(.txPower) {
            adv.append(ADStructure(type: ADType.txPower, data: [UInt8(bitPattern: adapterTxPower)], field: "includes tx-power"))
        }
        advertisingData = adv

        // BlueZ's order (bt_ad_generate): the lists and data, then the name in what room is
        // left (shortened when it does not fit), then the raw structures.
        let response = ad.scanResponse
        var scan = Self.listed(
            response.serviceUUIDs, response.solicitUUIDs, response.manufacturerData, response.serviceData, prefix: "scan_response.")
        if let name = ad.localName ?? (ad.includes.contains(.localName) ? adapterName : nil) {
            let field = ad.localName != nil ? "local_name" : "includes local-name"
            let bytes = Array(name.utf8)
            let room = max(0, Self.limit - scan.reduce(0) { $0 + $1.size } - 2)
            if bytes.count <= room {
                scan.append(ADStructure(type: ADType.completeName, data: bytes, field: field))
            } else {
                scan.append(ADStructure(type: ADType.shortenedName, data: Self.utf8Prefix(name, maxBytes: room), field: field))
            }
        }
        scanResponse = scan + Self.raw(response.data, prefix: "scan_response.")
    }

    /// The structures BlueZ builds from the lists and data of one packet, in its order: service
    /// UUIDs, solicit UUIDs, manufacturer data, service data; fields named with `prefix`.
    private static func listed(
        _ services: [BluetoothUUID], _ solicits: [BluetoothUUID], _ manufacturers: [Advertisement.ManufacturerData],
        _ serviceData: [Advertisement.ServiceData], prefix: String
    ) -> [ADStructure] {
        var out = uuidLists(services, types: (ADType.uuid16Complete, ADType.uuid32Complete, ADType.uuid128Complete), field: prefix + "service_uuids")
        out += uuidLists(solicits, types: (ADType.solicit16, ADType.solicit32, ADType.solicit128), field: prefix + "solicit_uuids")
        for entry in manufacturers {
            out.append(ADStructure(
                type: ADType.manufacturerData, data: [UInt8(entry.companyID & 0xFF), UInt8(entry.companyID >> 8)] + entry.data,
                field: prefix + "manufacturer_data " + hex16(entry.companyID)))
        }
        for entry in serviceData {
            let type: UInt8 = switch entry.uuid.size {
            case .bits16: ADType.serviceData16
            case .bits32: ADType.serviceData32
            case .bits128: ADType.serviceData128
            }
            out.append(ADStructure(type: type, data: entry.uuid.airBytes + entry.data, field: prefix + "service_data \(entry.uuid)"))
        }
        return out
    }

    private static func raw(_ data: [Advertisement.RawData], prefix: String) -> [ADStructure] {
        data.map { ADStructure(type: $0.type, data: $0.data, field: prefix + "data " + hex8($0.type)) }
    }

    /// The Flags AD BlueZ adds for a discoverable advertisement: LE General Discoverable and
    /// BR/EDR Not Supported (`02 01 06`). A non-discoverable one carries none.
    static func flags(for ad: Advertisement) -> UInt8? {
        ad.discoverable == true ? 0x06 : nil
    }

    private static func uuidLists(
        _ uuids: [BluetoothUUID], types: (UInt8, UInt8, UInt8), field: String
    ) -> [ADStructure] {
        var out: [ADStructure] = []
        for (size, type) in [(BluetoothUUID.Size.bits16, types.0), (.bits32, types.1), (.bits128, types.2)] {
            let matching = uuids.filter { $0.size == size }
            if !matching.isEmpty {
                out.append(ADStructure(type: type, data: matching.flatMap(\.airBytes), field: field))
            }
        }
        return out
    }

    /// The longest prefix of `text` within `maxBytes` bytes that ends on a character boundary.
    static func utf8Prefix(_ text: String, maxBytes: Int) -> [UInt8] {
        var out: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            guard out.count + bytes.count <= maxBytes else { break }
            out += bytes
        }
        return out
    }

    static func hex16(_ value: UInt16) -> String {
        "0x" + Hex.encode([UInt8(value >> 8), UInt8(value & 0xFF)]).uppercased()
    }

    static func hex8(_ value: UInt8) -> String {
        "0x" + Hex.encode([value]).uppercased()
    }
}

/// AD type numbers from the Bluetooth Assigned Numbers.
public enum ADType {
    /// Flags.
    public static let flags: UInt8 = 0x01
    /// Incomplete list of 16-bit service UUIDs.
    public static let uuid16Incomplete: UInt8 = 0x02
    /// Complete list of 16-bit service UUIDs.
    public static let uuid16Complete: UInt8 = 0x03
    /// Incomplete list of 32-bit service UUIDs.
    public static let uuid32Incomplete: UInt8 = 0x04
    /// Complete list of 32-bit service UUIDs.
    public static let uuid32Complete: UInt8 = 0x05
    /// Incomplete list of 128-bit service UUIDs.
    public static let uuid128Incomplete: UInt8 = 0x06
    /// Complete list of 128-bit service UUIDs.
    public static let uuid128Complete: UInt8 = 0x07
    /// Shortened local name.
    public static let shortenedName: UInt8 = 0x08
    /// Complete local name.
    public static let completeName: UInt8 = 0x09
    /// TX power level.
    public static let txPower: UInt8 = 0x0A
    /// 16-bit service solicitation UUIDs.
    public static let solicit16: UInt8 = 0x14
    /// 128-bit service solicitation UUIDs.
    public static let solicit128: UInt8 = 0x15
    /// Service data, 16-bit UUID.
    public static let serviceData16: UInt8 = 0x16
    /// Appearance.
    public static let appearance: UInt8 = 0x19
    /// 32-bit service solicitation UUIDs.
    public static let solicit32: UInt8 = 0x1F
    /// Service data, 32-bit UUID.
    public static let serviceData32: UInt8 = 0x20
    /// Service data, 128-bit UUID.
    public static let serviceData128: UInt8 = 0x21
    /// Manufacturer specific data.
    public static let manufacturerData: UInt8 = 0xFF

    /// AD types BlueZ builds itself and refuses in `Data`: flags, UUID lists, names, TX power,
    /// solicit UUIDs, service data, appearance, manufacturer data and the mesh types.
    public static let managedByBlueZ: Set<UInt8> = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x14, 0x15, 0x16, 0x19, 0x1F, 0x20, 0x21,
        0x29, 0x2A, 0x2B, 0xFF,
    ]
}
