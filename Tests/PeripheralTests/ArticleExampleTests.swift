import Peripheral
import Testing

/// The example of the Peripheral article (Sources/Peripheral/Peripheral.docc), run.
@Suite("The Peripheral article's example")
struct ArticleExampleTests {
    @Test("the article's advertisement validates and fits, and its iBeacon builds")
    func articleExample() throws {
        var heart = Advertisement(kind: .peripheral, serviceUUIDs: [BluetoothUUID(0x180D)], localName: "Thermo-1")
        heart.manufacturerData = [.init(companyID: 0xFFFF, data: [0x01, 0x02])]
        try heart.validate()

        let payload = AdvertisingPayload(for: heart)
        let beacon = try Beacon.iBeacon(
            uuid: try BluetoothUUID("e2c56db5-dffb-48d2-b060-d0f5a71096e0"), major: 1, minor: 2, measuredPower: -59
        ).advertisement()

        #expect(payload.advertisingSize == 4 + 6)  // the UUID list and the manufacturer data
        #expect(beacon.manufacturerData.first?.companyID == 0x004C)
    }
}
