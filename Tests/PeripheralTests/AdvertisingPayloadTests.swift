import Testing

import Peripheral

@Suite("The bytes BlueZ puts on air")
struct AdvertisingPayloadTests {
    @Test("structures come in BlueZ's order: UUIDs, solicit, manufacturer, service data, appearance, data, flags, tx power")
    func order() throws {
        let ad = Advertisement(
            kind: .peripheral, serviceUUIDs: [BluetoothUUID(0x180D)], solicitUUIDs: [BluetoothUUID(0x1812)],
            manufacturerData: [.init(companyID: 0xFFFF, data: [1])], serviceData: [.init(uuid: BluetoothUUID(0x9999), data: [2])],
            data: [.init(type: 0x26, data: [3])], discoverable: true, includes: [.txPower], appearance: 0x0341)

        let payload = AdvertisingPayload(for: ad, adapterTxPower: -4)

        #expect(payload.advertisingData.map(\.type) == [0x03, 0x14, 0xFF, 0x16, 0x19, 0x26, 0x01, 0x0A])
        #expect(Hex.encode(payload.advertisingBytes)
            == "03030d18" + "03141218" + "04ffffff01" + "0416999902" + "03194103" + "022603" + "020106" + "020afc")
    }

    @Test("UUIDs are grouped into one list per size, in the order given")
    func uuidLists() throws {
        let ad = Advertisement(kind: .broadcast, serviceUUIDs: [
            BluetoothUUID(0x180D), try BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e"), BluetoothUUID(0x180F),
        ])

        let payload = AdvertisingPayload(for: ad)

        #expect(payload.advertisingData.map(\.type) == [0x03, 0x07])
        #expect(payload.advertisingData.map(\.size) == [6, 18])
    }

    @Test("only a discoverable advertisement carries flags, General Discoverable and BR/EDR Not Supported")
    func flags() {
        #expect(AdvertisingPayload(for: Advertisement(kind: .broadcast)).advertisingBytes == [])
        #expect(AdvertisingPayload(for: Advertisement(kind: .peripheral)).advertisingBytes == [])
        #expect(AdvertisingPayload(for: Advertisement(kind: .peripheral, discoverable: true)).advertisingBytes == [0x02, 0x01, 0x06])
    }

    /// The bytes btmon captured in the test bed when BlueZ's example-advertisement registered
    /// (scenario 11): its structures, then the TX power the kernel appended.
    @Test("BlueZ's example-advertisement encodes to the bytes captured from the real stack")
    func matchesCapture() throws {
        let example = Advertisement(
            kind: .peripheral, serviceUUIDs: [BluetoothUUID(0x180D), BluetoothUUID(0x180F)],
            manufacturerData: [.init(companyID: 0xFFFF, data: [0, 1, 2, 3])],
            serviceData: [.init(uuid: BluetoothUUID(0x9999), data: [0, 1, 2, 3, 4])],
            data: [.init(type: 0x26, data: [1, 1, 0])], includes: [.txPower], localName: "TestAdvertisement")

        let payload = AdvertisingPayload(for: example, adapterTxPower: 0)

        #expect(Hex.encode(payload.advertisingBytes) == "05030d180f1807ffffff000102030816999900010203040426010100020a00")
    }

    @Test("the local name goes in the scan response, complete when it fits")
    func localName() {
        let payload = AdvertisingPayload(for: Advertisement(kind: .broadcast, localName: "Thermo-1"))

        #expect(payload.advertisingData.isEmpty)
        #expect(Hex.encode(payload.scanResponseBytes) == "0909" + Hex.encode(Array("Thermo-1".utf8)))
    }

    @Test("a name longer than the scan response is shortened at a character boundary")
    func shortenedName() {
        let name = String(repeating: "é", count: 20)

        let payload = AdvertisingPayload(for: Advertisement(kind: .broadcast, localName: name))

        #expect(payload.scanResponse.first?.type == ADType.shortenedName)
        #expect(payload.scanResponse.first?.data.count == 28)
        #expect(payload.scanResponseSize <= 31)
    }

    @Test("includes local-name uses the adapter's name")
    func includedName() {
        let payload = AdvertisingPayload(for: Advertisement(kind: .broadcast, includes: [.localName]), adapterName: "gateway")

        #expect(payload.scanResponse == [ADStructure(type: 0x09, data: Array("gateway".utf8), field: "includes local-name")])
    }
}
