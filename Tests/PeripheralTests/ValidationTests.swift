import Testing

import Peripheral

@Suite("Validation mirrors BlueZ's rules, naming the field and the numbers")
struct ValidationTests {
    @Test("advertising data of exactly 31 bytes is accepted")
    func exactly31() {
        let ad = Advertisement(kind: .broadcast, manufacturerData: [.init(companyID: 0xFFFF, data: Array(repeating: 0, count: 27))])

        #expect(AdvertisingPayload(for: ad).advertisingSize == 31)
        #expect(ad.problems() == [])
    }

    @Test("advertising data of 32 bytes is refused, naming the field, the total and the excess")
    func thirtyTwo() {
        let ad = Advertisement(kind: .broadcast, manufacturerData: [.init(companyID: 0xFFFF, data: Array(repeating: 0, count: 28))])

        #expect(ad.problems() == ["manufacturer_data 0xFFFF is 32 bytes; advertising data would be 32 of 31 bytes (1 over)"])
    }

    @Test("an AD structure with more data than its length byte can count is refused, with the data size")
    func oversizedStructure() {
        let ad = Advertisement(kind: .broadcast, manufacturerData: [.init(companyID: 0xFFFF, data: Array(repeating: 0, count: 253))])

        let problems = ad.problems()

        #expect(problems.first == "manufacturer_data 0xFFFF has 255 bytes of data; one AD structure holds at most 254")
    }

    @Test("an iBeacon with a service UUID added is 3 over, and the message says which field is largest")
    func iBeaconPlusUUID() throws {
        var ad = try Beacon.iBeacon(uuid: BluetoothUUID(0x1234), major: 1, minor: 2, measuredPower: -59).advertisement()
        ad.serviceUUIDs = [BluetoothUUID(0x180D)]

        let error = #expect(throws: PeripheralError.self) { try ad.validate() }

        #expect(error?.code == .invalid)
        #expect(error?.message == "manufacturer_data 0x004C is 27 bytes; advertising data would be 34 of 31 bytes (3 over)")
    }

    @Test("each BlueZ rule has its own message", arguments: [
        (Advertisement(includes: [.localName], localName: "x"), "local_name and includes \"local-name\" cannot both be set; BlueZ refuses the pair"),
        (Advertisement(includes: [.appearance], appearance: 0x0341), "appearance and includes \"appearance\" cannot both be set; BlueZ refuses the pair"),
        (Advertisement(kind: .broadcast, discoverable: true), "discoverable = true needs type = \"peripheral\"; a broadcast advertisement cannot be discoverable"),
        (Advertisement(discoverableTimeout: 60, timeout: 30), "discoverable_timeout (60 s) is longer than timeout (30 s)"),
        (Advertisement(minInterval: 19), "min_interval_ms is 19; it must be between 20 and 10485759 ms"),
        (Advertisement(maxInterval: 10_485_760), "max_interval_ms is 10485760; it must be between 20 and 10485759 ms"),
        (Advertisement(minInterval: 200, maxInterval: 100), "min_interval_ms (200) is greater than max_interval_ms (100)"),
        (Advertisement(txPower: 21), "tx_power is 21 dBm; it must be between -127 and 20"),
        (Advertisement(txPower: -128), "tx_power is -128 dBm; it must be between -127 and 20"),
        (Advertisement(data: [.init(type: 0xFF, data: [1])]), "data 0xFF is an AD type BlueZ builds itself; use the matching field instead"),
        (Advertisement(localName: ""), "local_name is empty"),
        (Advertisement(manufacturerData: [.init(companyID: 1, data: []), .init(companyID: 1, data: [2])]), "manufacturer_data 0x0001 is given twice"),
        (Advertisement(manufacturerData: [1, 1, 1].map { .init(companyID: $0, data: []) }), "manufacturer_data 0x0001 is given twice"),
        (Advertisement(serviceUUIDs: [BluetoothUUID(0x180D), BluetoothUUID(0x180D)]), "service_uuids 180d is given twice"),
        (Advertisement(solicitUUIDs: [BluetoothUUID(0x1812), BluetoothUUID(0x1812)]), "solicit_uuids 1812 is given twice"),
        (Advertisement(data: [.init(type: 0x26, data: [1]), .init(type: 0x26, data: [2])]), "data 0x26 is given twice"),
    ])
    func rule(ad: Advertisement, message: String) {
        #expect(ad.problems() == [message])
    }

    @Test("a secondary channel or include the adapter does not support is refused, naming the adapter")
    func capabilities() {
        let adapter = AdapterCapabilities(name: "hci0", includes: [.txPower], secondaryChannels: [.oneM])
        let ad = Advertisement(kind: .broadcast, includes: [.localName], secondaryChannel: .coded)

        let problems = ad.problems(for: adapter)

        #expect(problems == [
            "secondary_channel \"Coded\" is not supported by hci0 (supported: 1M)",
            "includes \"local-name\" is not supported by hci0",
        ])
    }

    @Test("a TX power outside what the adapter transmits is refused, naming its range")
    func txPowerRange() {
        let adapter = AdapterCapabilities(name: "hci0", txPowerRange: -34...7)

        let problems = Advertisement(txPower: 10).problems(for: adapter)

        #expect(problems == ["tx_power is 10 dBm; hci0 transmits between -34 and 7 dBm"])
    }

    @Test("every problem is reported at once, in one error")
    func allProblemsAtOnce() {
        let ad = Advertisement(minInterval: 1, txPower: 50)

        let error = #expect(throws: PeripheralError.self) { try ad.validate() }

        #expect(error?.message == "min_interval_ms is 1; it must be between 20 and 10485759 ms; tx_power is 50 dBm; it must be between -127 and 20")
    }
}
