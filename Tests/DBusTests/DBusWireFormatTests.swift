import DBus
import Testing

/// D-Bus messages as bytes on the wire, as libdbus reads and writes them (what `make fuzz`'s
/// fuzz-message target feeds the reader).
@Suite("Wire format")
struct DBusWireFormatTests {
    @Test("A message written as wire bytes reads back as the same message")
    func roundTrip() throws {
        var message = DBusMessage.methodCall(
            destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.LEAdvertisingManager1",
            member: "RegisterAdvertisement",
            body: [.objectPath("/org/bleadvd/advertisement/1"), .variantDictionary(["Type": .string("broadcast"), "TxPower": .int16(-4)])])
        message.serial = 7

        let read = try DBusMessage(wireBytes: message.wireBytes())

        #expect(read == message)
    }

    @Test("Wire bytes begin with the byte order, the message type and the protocol version")
    func header() throws {
        let message = DBusMessage.signal(path: "/", interface: "org.example.I", member: "Changed")

        let bytes = try message.wireBytes()

        #expect(Array(bytes.prefix(4)) == [UInt8(ascii: "l"), 4, 0, 1])
    }

    @Test("Bytes that are not a D-Bus message are refused with libdbus's reason")
    func garbageIsRefused() {
        let error = #expect(throws: DBusError.self) { try DBusMessage(wireBytes: Array("not a message at all, no".utf8)) }

        #expect(error?.message.hasPrefix("not a D-Bus message: ") == true, "\(error?.message ?? "")")
    }

    @Test("No bytes at all are refused")
    func emptyIsRefused() {
        #expect(throws: DBusError.self) { try DBusMessage(wireBytes: []) }
    }
}
