import Testing

import Peripheral

/// Golden bytes computed by hand from the published layouts (Apple's iBeacon, the AltBeacon
/// specification, Google's Eddystone frames), in the order BlueZ 5.66 puts them on air: its
/// structures first, then Flags `02 01 06` (seen with btmon in the test bed).
@Suite("Beacon presets put the published layouts on air")
struct BeaconTests {
    static func airHex(_ beacon: Beacon) throws -> String {
        Hex.encode(AdvertisingPayload(for: try beacon.advertisement()).advertisingBytes)
    }

    @Test("an iBeacon is Apple's 02 15, UUID, major, minor and measured power, then flags: 30 bytes")
    func iBeacon() throws {
        let beacon = Beacon.iBeacon(
            uuid: try BluetoothUUID("e2c56db5-dffb-48d2-b060-d0f5a71096e0"), major: 1, minor: 2, measuredPower: -59)

        let hex = try Self.airHex(beacon)

        #expect(hex == "1aff4c000215" + "e2c56db5dffb48d2b060d0f5a71096e0" + "0001" + "0002" + "c5" + "020106")
        #expect(hex.count / 2 == 30)
    }

    @Test("an AltBeacon is the maker's id, BE AC, 20-byte id, RSSI and reserved, then flags: 31 bytes")
    func altBeacon() throws {
        let id = Hex.decode("00112233445566778899aabbccddeeff00010203")!
        let beacon = Beacon.altBeacon(manufacturerID: 0x0118, beaconID: id, referenceRSSI: -59)

        let hex = try Self.airHex(beacon)

        #expect(hex == "1bff1801beac" + "00112233445566778899aabbccddeeff00010203" + "c5" + "00" + "020106")
        #expect(hex.count / 2 == 31)
    }

    @Test("an Eddystone-UID is the FEAA list, a UID frame and flags: 31 bytes")
    func eddystoneUID() throws {
        let beacon = Beacon.eddystoneUID(
            namespace: Hex.decode("00010203040506070809")!, instance: Hex.decode("0a0b0c0d0e0f")!, txPower: -20)

        let hex = try Self.airHex(beacon)

        #expect(hex == "0303aafe" + "1716aafe" + "00ec" + "00010203040506070809" + "0a0b0c0d0e0f" + "0000" + "020106")
        #expect(hex.count / 2 == 31)
    }

    @Test("an Eddystone-URL compresses the scheme and .com/ into one byte each")
    func eddystoneURL() throws {
        let hex = try Self.airHex(.eddystoneURL(url: "https://www.google.com/", txPower: -20))

        #expect(hex == "0303aafe" + "0d16aafe" + "10ec" + "01" + "676f6f676c65" + "00" + "020106")
    }

    @Test("an Eddystone-TLM is the FEAA list, frame 20 version 00, then mV, 8.8 °C, ADV_CNT and SEC_CNT big endian, then flags: 25 bytes")
    func eddystoneTLM() throws {
        let counters = EddystoneTLM.Counters(advertisingCount: 0x0102_0304, uptimeTenths: 0x0A0B_0C0D)

        let hex = try Self.airHex(.eddystoneTLM(EddystoneTLM(batteryMillivolts: 3000, temperature: 21.5, counters: counters)))

        #expect(hex == "0303aafe" + "1116aafe" + "2000" + "0bb8" + "1580" + "01020304" + "0a0b0c0d" + "020106")
        #expect(hex.count / 2 == 25)
    }

    @Test("a TLM frame without a battery or temperature sends 0 mV and 80 00, as the spec says for not measured")
    func eddystoneTLMNotMeasured() {
        #expect(Hex.encode(EddystoneTLM().frame) == "2000" + "0000" + "8000" + "00000000" + "00000000")
    }

    @Test("a TLM temperature below zero is two's complement 8.8: -1.5 °C is FE 80")
    func eddystoneTLMNegative() {
        #expect(Hex.encode(EddystoneTLM(temperature: -1.5).frame) == "2000" + "0000" + "fe80" + "00000000" + "00000000")
    }

    @Test("a TLM temperature the frame cannot carry is refused with its range")
    func eddystoneTLMTemperatureRefused() {
        #expect(throws: PeripheralError(.invalidValue, "eddystone_tlm temperature is 128.0 °C; the frame carries -128 to 127.99 °C")) {
            try Beacon.eddystoneTLM(EddystoneTLM(temperature: 128)).advertisement()
        }
    }

    @Test("Eddystone URL expansion codes", arguments: [
        ("http://www.example.org", "006578616d706c6508"),
        ("https://a.io/x", "03612e696f2f78"),
        ("http://b.edu/c.net", "02" + "62" + "02" + "63" + "0a"),
        ("https://www.x.info/", "017804"),
    ])
    func urlCompression(url: String, expected: String) throws {
        #expect(Hex.encode(try EddystoneURL.encode(url)) == expected)
    }

    @Test("URLs the frame cannot carry are refused with the reason", arguments: [
        ("ftp://example.com", "must start with http://"),
        ("https://example.com/with space", "cannot be sent (byte 0x20)"),
        ("https://www.a-very-long-host-name.com/", "encodes to 22 bytes; the frame holds 17"),
    ])
    func urlRefused(url: String, reason: String) {
        let error = #expect(throws: PeripheralError.self) { try EddystoneURL.encode(url) }

        #expect(error?.code == .invalidValue)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
    }

    @Test("preset fields of the wrong length are refused, naming the field", arguments: [
        (Beacon.altBeacon(manufacturerID: 1, beaconID: [1, 2], referenceRSSI: 0), "altbeacon beacon_id is 2 bytes; it must be 20"),
        (Beacon.eddystoneUID(namespace: [1], instance: [1, 2, 3, 4, 5, 6], txPower: 0), "eddystone_uid namespace is 1 bytes; it must be 10"),
        (Beacon.eddystoneUID(namespace: Array(repeating: 0, count: 10), instance: [1], txPower: 0), "eddystone_uid instance is 1 bytes; it must be 6"),
    ])
    func wrongLengths(beacon: Beacon, message: String) {
        let error = #expect(throws: PeripheralError.self) { try beacon.advertisement() }

        #expect(error?.message == message)
    }

    @Test("every preset is a valid advertisement within the budget")
    func presetsAreValid() throws {
        let presets: [Beacon] = [
            .iBeacon(uuid: BluetoothUUID(0x1234), major: 0, minor: 0, measuredPower: 0),
            .altBeacon(manufacturerID: 0xFFFF, beaconID: Array(repeating: 7, count: 20), referenceRSSI: -1),
            .eddystoneUID(namespace: Array(repeating: 1, count: 10), instance: Array(repeating: 2, count: 6), txPower: 0),
            .eddystoneURL(url: "https://abcdefghijklmnop.com", txPower: 0),
        ]

        for preset in presets {
            #expect(try preset.advertisement().problems() == [], "\(preset)")
        }
    }
}
