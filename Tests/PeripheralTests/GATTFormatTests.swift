import Peripheral
import Testing

@Suite("GATT value formats")
struct GATTFormatTests {
    @Test("a sint16 with exponent -2 carries 0.01 units, little-endian")
    func scaledSigned() throws {
        #expect(try GATTFormat(.sint16, exponent: -2).encode(.number(21.5)) == [0x66, 0x08])
        #expect(try GATTFormat(.sint16, exponent: -2).encode(.number(-0.01)) == [0xFF, 0xFF])
    }

    @Test("decoding reverses encoding")
    func roundTrip() throws {
        let format = GATTFormat(.uint32, exponent: -3)

        #expect(try format.decode(format.encode(.number(1013.25))) == .number(1013.25))
    }

    @Test("a number that does not fit the layout is refused")
    func overflow() {
        #expect(throws: PeripheralError.self) { try GATTFormat(.uint8).encode(.number(256)) }
        #expect(throws: PeripheralError.self) { try GATTFormat(.sint8).encode(.number(-129)) }
    }

    @Test("a write of the wrong length is refused as a length error")
    func wrongLength() {
        #expect(throws: GATTWriteError.invalidLength("uint8 is 1 byte, not 2")) { try GATTFormat(.uint8).decode([1, 2]) }
    }

    @Test("a write outside the range is refused as a value error")
    func outOfRange() {
        #expect(throws: GATTWriteError.invalidValue("101 is outside 0 to 100")) {
            try GATTFormat(.uint8, range: 0...100).decode([101])
        }
    }

    @Test("text must be UTF-8 and within its length")
    func text() throws {
        #expect(try GATTFormat(.utf8).decode(Array("é".utf8)) == .text("é"))
        #expect(throws: GATTWriteError.self) { try GATTFormat(.utf8).decode([0xFF]) }
        #expect(throws: GATTWriteError.self) { try GATTFormat(.utf8, maximumLength: 3).decode(Array("four".utf8)) }
    }

    @Test("float32 is IEEE-754, little-endian")
    func float() throws {
        #expect(try GATTFormat(.float32).encode(.number(1.5)) == [0x00, 0x00, 0xC0, 0x3F])
    }

    @Test("a write's description says how many bytes, never which: a write-only value is a secret")
    func writeDescribedWithoutBytes() {
        let event = GATTEvent(GATTCharacteristicID(service: "setup", characteristic: "pin"), .written(Array("1234".utf8), .text("1234")), central: "AA:BB:CC:DD:EE:FF")

        #expect(event.description == "setup.pin written (4 bytes) by AA:BB:CC:DD:EE:FF")
    }
}
