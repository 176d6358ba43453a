import Testing

import Peripheral

/// The scan response's own fields (BlueZ 5.80) and advertising data past 31 bytes (extended
/// advertising), laid out and checked as BlueZ does: `bt_ad_generate` in src/shared/ad.c puts
/// the lists and data first, then the name in the room left, then the raw structures.
@Suite("Scan responses and long advertising data")
struct ScanResponseTests {
    static let tag = Advertisement(
        kind: .broadcast, localName: "Tag")
    static let legacy = AdapterCapabilities(name: "hci0", maxAdvertisingLength: 31)
    static let extended = AdapterCapabilities(name: "hci0", secondaryChannels: [.oneM, .twoM], maxAdvertisingLength: 251)

    static func tagWith(_ response: Advertisement.ScanResponse) -> Advertisement {
        var ad = tag
        ad.scanResponse = response
        return ad
    }

    @Test("the scan response carries its manufacturer data, then the name, then its raw data, in BlueZ's order")
    func scanResponseOrder() {
        let ad = Self.tagWith(.init(manufacturerData: [.init(companyID: 0xFFFF, data: [0x05, 0x06])], data: [.init(type: 0x26, data: [0x01])]))

        let payload = AdvertisingPayload(for: ad)

        #expect(payload.scanResponseBytes == [0x05, 0xFF, 0xFF, 0xFF, 0x05, 0x06, 0x04, 0x09, 0x54, 0x61, 0x67, 0x02, 0x26, 0x01])
        #expect(payload.scanResponse.map(\.field) == ["scan_response.manufacturer_data 0xFFFF", "local_name", "scan_response.data 0x26"])
    }

    @Test("a name after scan response fields is shortened to the room they leave")
    func nameShortenedToTheRoomLeft() {
        var ad = Self.tagWith(.init(serviceData: [.init(uuid: BluetoothUUID(0xFCD2), data: Array(repeating: 0, count: 18))]))
        ad.localName = "Living room sensor"

        let payload = AdvertisingPayload(for: ad)

        #expect(payload.scanResponseSize == 31)
        #expect(payload.scanResponse.last?.type == ADType.shortenedName)
        #expect(payload.scanResponse.last?.data == Array("Living ".utf8))
        #expect(ad.problems() == [])
    }

    @Test("a name with no room beside the scan response's fields is refused, with what they take")
    func nameWithNoRoom() {
        let ad = Self.tagWith(.init(manufacturerData: [.init(companyID: 0xFFFF, data: Array(repeating: 0, count: 20))],
                                    data: [.init(type: 0x26, data: Array(repeating: 0, count: 3))]))

        #expect(ad.problems() == ["local_name has no room in the scan response: its fields take 29 of 31 bytes"])
    }

    @Test("a name too long beside raw scan response data is refused with the length that fits: BlueZ shortens it ignoring the data after it")
    func nameShortenedBesideRawData() {
        var ad = Self.tagWith(.init(data: [.init(type: 0x26, data: Array(repeating: 0, count: 10))]))
        ad.localName = "Living room sensor"

        #expect(ad.problems() == [
            "local_name is 20 bytes; the scan response would be 32 of 31 bytes (1 over); a name of 17 bytes fits (BlueZ shortens it only to the room before scan_response.data)",
        ])
    }

    @Test("a scan response without a name over 31 bytes says the total and the excess")
    func scanResponseOverBudgetWithoutName() {
        var ad = Self.tagWith(.init(manufacturerData: [.init(companyID: 0xFFFF, data: Array(repeating: 0, count: 22))],
                                    data: [.init(type: 0x26, data: Array(repeating: 0, count: 4))]))
        ad.localName = nil

        #expect(ad.problems() == [
            "scan_response.manufacturer_data 0xFFFF is 26 bytes; the scan response would be 32 of 31 bytes (1 over)",
        ])
    }

    @Test("a scan response's raw data of a type BlueZ builds itself is refused, named as the scan response's")
    func scanResponseManagedType() {
        let ad = Self.tagWith(.init(data: [.init(type: 0xFF, data: [1])]))

        #expect(ad.problems() == ["scan_response.data 0xFF is an AD type BlueZ builds itself; use the matching field instead"])
    }

    @Test("scan response fields on a bluetoothd older than 5.80 are refused, naming what its adapter's properties tell",
          arguments: [(StackRelease.before571, "older than 5.71"), (.longData, "5.71 to 5.78")])
    func scanResponseNeedsBlueZ580(release: StackRelease, shown: String) {
        let ad = Self.tagWith(.init(manufacturerData: [.init(companyID: 0xFFFF, data: [1])]))
        let adapter = AdapterCapabilities(name: "hci0", release: release)

        #expect(ad.problems(for: adapter) == [
            "scan_response needs BlueZ 5.80 or later; bluetoothd on hci0 is \(shown) and would leave it out",
        ])
    }

    @Test("a name alone in the scan response needs no particular BlueZ")
    func nameAloneOnOldBlueZ() {
        #expect(Self.tag.problems(for: AdapterCapabilities(name: "hci0", release: .before571)) == [])
    }

    @Test("which BlueZ answers is read off the adapter's properties",
          arguments: [([String](), StackRelease.before571), (["Manufacturer", "Version"], .longData), (["Manufacturer", "Connectable"], .scanResponseFields)])
    func releaseFromProperties(names: [String], release: StackRelease) {
        #expect(StackRelease(adapterProperties: ["Address", "Powered"] + names) == release)
    }

    static let long = Advertisement(
        kind: .broadcast, manufacturerData: [.init(companyID: 0xFFFF, data: Array(0..<100))], secondaryChannel: .oneM)

    @Test("with a secondary channel the advertising data may pass 31 bytes, up to the adapter's MaxAdvLen")
    func longDataOnAnExtendedAdapter() {
        #expect(AdvertisingPayload(for: Self.long).advertisingSize == 104)
        #expect(Self.long.problems() == [])
        #expect(Self.long.problems(for: Self.extended) == [])
    }

    @Test("long data past the most any adapter sends is refused at load, with 251")
    func longDataPastTheKernelsMost() {
        var ad = Self.long
        ad.manufacturerData[0].data = Array(repeating: 0, count: 250)

        #expect(ad.problems() == ["manufacturer_data 0xFFFF is 254 bytes; advertising data would be 254 of 251 bytes (3 over)"])
    }

    @Test("long data without a secondary channel is refused with 31: legacy PDUs carry no more")
    func longDataWithoutSecondaryChannel() {
        var ad = Self.long
        ad.secondaryChannel = nil

        #expect(ad.problems() == ["manufacturer_data 0xFFFF is 104 bytes; advertising data would be 104 of 31 bytes (73 over)"])
    }

    @Test("long data on an adapter without extended advertising is refused with its figure, never cut")
    func longDataOnALegacyAdapter() {
        let adapter = AdapterCapabilities(name: "hci0", secondaryChannels: [.oneM], maxAdvertisingLength: 31)

        #expect(Self.long.problems(for: adapter) == [
            "manufacturer_data 0xFFFF is 104 bytes; advertising data would be 104 of 31 bytes (73 over); hci0 has no extended advertising (its MaxAdvLen is 31)",
        ])
    }

    @Test("long data with a bluetoothd older than 5.71 is refused, naming it")
    func longDataOnOldBlueZ() {
        let adapter = AdapterCapabilities(name: "hci0", secondaryChannels: [.oneM], maxAdvertisingLength: 251, release: .before571)

        #expect(Self.long.problems(for: adapter) == [
            "manufacturer_data 0xFFFF is 104 bytes; advertising data would be 104 of 31 bytes (73 over); bluetoothd on hci0 is older than 5.71, which sends 31 bytes at most (5.69 sends more)",
        ])
    }

    @Test("a connectable extended advertisement with a scan response is refused: it would have none")
    func connectableExtendedHasNoScanResponse() {
        let ad = Advertisement(kind: .peripheral, localName: "Tag", secondaryChannel: .oneM)

        #expect(ad.problems() == [
            "local_name would be lost: a connectable extended advertisement (secondary_channel) has no scan response; make it type = \"broadcast\", or leave secondary_channel out",
        ])
    }
}

extension ScanResponseTests {
    @Test("an entry given twice in the scan response is refused, named as the scan response's")
    func duplicateInScanResponse() {
        let ad = Self.tagWith(.init(serviceUUIDs: [BluetoothUUID(0x180F), BluetoothUUID(0x180F)]))

        #expect(ad.problems() == ["scan_response.service_uuids 180f is given twice"])
    }
}

extension ScanResponseTests {
    @Test("the adapter's name with raw scan response data is refused: BlueZ shortens it only to the room before them, and the name is not known until registered")
    func adapterNameBesideRawData() {
        let ad = Advertisement(kind: .broadcast, scanResponse: .init(data: [.init(type: 0x26, data: [1])]), includes: [.localName])

        #expect(ad.problems().first?.hasPrefix("includes \"local-name\" cannot be combined with scan_response.data") == true)
    }
}
