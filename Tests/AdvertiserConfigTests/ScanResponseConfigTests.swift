import AdvertiserConfig
import Peripheral
import Testing

@Suite("A scan response's fields in the config")
struct ScanResponseConfigTests: ReadsConfigText {
    func tag(_ text: String) throws -> ConfiguredAdvertisement {
        try #require(try parse(text).advertisements["tag"])
    }

    static let table = """
        [advertisement.tag]
        type = "broadcast"
        local_name = "Tag"
        manufacturer_data = { "0xFFFF" = "01" }
        [advertisement.tag.scan_response]
        manufacturer_data = { "0x0059" = "0a0b" }
        service_uuids = ["180F"]
        service_data = { "180F" = "64" }
        solicit_uuids = ["1812"]
        data = { "0x26" = "01" }

        """

    @Test("a scan_response table takes the advertising data's fields, read the same way")
    func everyField() throws {
        let response = try tag(Self.table).advertisement.scanResponse

        #expect(response == Advertisement.ScanResponse(
            serviceUUIDs: [BluetoothUUID(0x180F)], solicitUUIDs: [BluetoothUUID(0x1812)],
            manufacturerData: [.init(companyID: 0x0059, data: [0x0A, 0x0B])],
            serviceData: [.init(uuid: BluetoothUUID(0x180F), data: [0x64])], data: [.init(type: 0x26, data: [0x01])]))
    }

    @Test("the advertising data keeps its own fields beside a scan response")
    func advertisingDataUnchanged() throws {
        let ad = try tag(Self.table).advertisement

        #expect(ad.manufacturerData == [.init(companyID: 0xFFFF, data: [0x01])])
        #expect(ad.serviceUUIDs.isEmpty)
    }

    @Test("a preset may have a scan response")
    func presetWithScanResponse() throws {
        let text = """
            [advertisement.tag]
            scan_response = { manufacturer_data = { "0xFFFF" = "0506" } }
            [advertisement.tag.ibeacon]
            uuid = "e2c56db5-dffb-48d2-b060-d0f5a71096e0"
            major = 1
            minor = 2
            measured_power = -59

            """

        let ad = try tag(text).advertisement

        #expect(ad.scanResponse.manufacturerData == [.init(companyID: 0xFFFF, data: [0x05, 0x06])])
        #expect(ad.manufacturerData.first?.companyID == 0x004C)
    }

    @Test("config errors in a scan response name its key", arguments: [
        ("[advertisement.tag.scan_response]\nlocal_name = \"x\"\n",
         "test.toml:2: advertisement.tag.scan_response.local_name: unknown key; known keys: data, manufacturer_data, service_data, service_uuids, solicit_uuids"),
        ("[advertisement.tag]\nscan_response = 3\n", "test.toml:2: advertisement.tag.scan_response: must be a table, not integer"),
        ("[advertisement.tag.scan_response]\nmanufacturer_data = { \"0xFFFF\" = \"xyz\" }\n",
         "test.toml:2: advertisement.tag.scan_response.manufacturer_data.0xFFFF: \"xyz\" is not hex bytes (e.g. \"0102ff\")"),
        ("[advertisement.tag]\ntype = \"broadcast\"\n[advertisement.tag.scan_response]\nmanufacturer_data = { \"0xFFFF\" = \"\(String(repeating: "00", count: 28))\" }\n",
         "test.toml:1: advertisement.tag: scan_response.manufacturer_data 0xFFFF is 32 bytes; the scan response would be 32 of 31 bytes (1 over)"),
    ])
    func errors(text: String, message: String) {
        #expect(error(text) == message)
    }

    @Test("set changes a scan response value, checked as the file is")
    func setScanResponseValue() throws {
        let configured = try tag(Self.table)

        let changed = try ConfigParser.applying(["scan_response.manufacturer_data.0x0059": .string("0c")], to: configured, name: "tag")

        #expect(changed.advertisement.scanResponse.manufacturerData == [.init(companyID: 0x0059, data: [0x0C])])
        #expect(changed.advertisement.manufacturerData == configured.advertisement.manufacturerData)
    }
}
