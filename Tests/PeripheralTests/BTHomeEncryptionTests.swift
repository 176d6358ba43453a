import Peripheral
import Testing

@Suite("Encrypted BTHome")
struct BTHomeEncryptionTests {
    // The format's published example (bthome.io, Encryption; the bytes Home Assistant's parser
    // tests with): key, address, counter and objects.
    static let key = BTHome.Key(hex: "231d39c1d7cc1ab1aee224cd096db932")!
    static let address: [UInt8] = [0x54, 0x48, 0xE6, 0x8F, 0x80, 0xA5]
    static let counter: UInt32 = 0x3322_1100
    static let plain: [UInt8] = [0x40, 0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13]

    @Test("the format's published example seals to its published bytes")
    func publishedExample() {
        let sealed = BTHome.seal(Self.plain, key: Self.key, address: Self.address, counter: Self.counter)

        #expect(Hex.encode(sealed) == "41" + "a47266c95f73" + "00112233" + "78237214")
    }

    @Test("what is sealed opens with the same key and address to the device information byte and the objects")
    func roundTrip() {
        let sealed = BTHome.seal(Self.plain, key: Self.key, address: Self.address, counter: 7)

        #expect(BTHome.open(sealed, key: Self.key, address: Self.address) == [0x41] + Self.plain.dropFirst())
    }

    @Test("a changed byte, another address or another key does not open")
    func tampered() {
        var sealed = BTHome.seal(Self.plain, key: Self.key, address: Self.address, counter: 7)
        let otherKey = BTHome.Key(hex: "00112233445566778899aabbccddeeff")!

        #expect(BTHome.open(sealed, key: otherKey, address: Self.address) == nil)
        #expect(BTHome.open(sealed, key: Self.key, address: [0, 0, 0, 0, 0, 1]) == nil)
        sealed[2] ^= 0x01
        #expect(BTHome.open(sealed, key: Self.key, address: Self.address) == nil)
    }

    @Test("each counter gives other bytes for the same values")
    func counterChangesTheBytes() {
        let first = BTHome.seal(Self.plain, key: Self.key, address: Self.address, counter: 1)
        let second = BTHome.seal(Self.plain, key: Self.key, address: Self.address, counter: 2)

        #expect(first.count == Self.plain.count + BTHome.encryptionOverhead)
        #expect(first.dropFirst().prefix(6) != second.dropFirst().prefix(6))
    }

    @Test("a key is 32 hex digits", arguments: ["231d39c1d7cc1ab1aee224cd096db9", "231d39c1d7cc1ab1aee224cd096db93200", "zz1d39c1d7cc1ab1aee224cd096db932", ""])
    func keyLength(text: String) {
        #expect(BTHome.Key(hex: text) == nil)
    }

    @Test("a key is shown by its check value, never its bytes")
    func keyDescription() {
        let shown = "\(Self.key)"

        #expect(!shown.contains("231d39c1"))
        #expect(shown == "key \(Self.key.checkValue)")
        #expect(Self.key.checkValue.count == 16)
        #expect(Self.key.checkValue != BTHome.Key(hex: "00112233445566778899aabbccddeeff")!.checkValue)
    }

    @Test("an adapter's address reads most significant byte first")
    func address() {
        #expect(BTHome.addressBytes("54:48:E6:8F:80:A5") == Self.address)
        #expect(BTHome.addressBytes("54:48:E6:8F:80") == nil)
    }
}
