import Testing

import Peripheral

@Suite("Bluetooth UUIDs")
struct BluetoothUUIDTests {
    @Test("16-bit, 32-bit and base-UUID forms of one UUID are equal and compress to 16 bits", arguments: [
        "180D", "180d", "0x180D", "0000180D", "0000180d-0000-1000-8000-00805f9b34fb", "0000180D-0000-1000-8000-00805F9B34FB",
    ])
    func baseUUIDsCompress(text: String) throws {
        let uuid = try BluetoothUUID(text)

        #expect(uuid == BluetoothUUID(0x180D))
        #expect(uuid.size == .bits16)
        #expect(uuid.airBytes == [0x0D, 0x18])
        #expect(uuid.uuidString == "0000180d-0000-1000-8000-00805f9b34fb")
    }

    @Test("a 32-bit UUID goes on air as 4 bytes, least significant first")
    func thirtyTwoBit() throws {
        let uuid = try BluetoothUUID("1234ABCD")

        #expect(uuid.size == .bits32)
        #expect(uuid.airBytes == [0xCD, 0xAB, 0x34, 0x12])
        #expect(uuid.shortString == "1234abcd")
    }

    @Test("a vendor UUID goes on air as 16 bytes in reverse order")
    func vendorUUID() throws {
        let uuid = try BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")

        #expect(uuid.size == .bits128)
        #expect(Hex.encode(uuid.airBytes) == "9ecadc240ee5a9e093f3a3b5010040" + "6e")
    }

    @Test("text that is not a UUID is refused with the accepted forms", arguments: [
        "18D", "xyz1", "6e400001b5a3-f393-e0a9-e50e24dcca9e", "", "6e400001-b5a3-f393-e0a9-e50e24dcca9",
    ])
    func invalid(text: String) {
        let error = #expect(throws: PeripheralError.self) { try BluetoothUUID(text) }

        #expect(error?.code == .invalidValue)
        #expect(error?.message.contains("use 4 hex digits (180D)") == true)
    }
}
