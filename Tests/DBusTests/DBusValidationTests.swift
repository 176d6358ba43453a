import Testing

@testable import DBus

@Suite("Validation before libdbus")
struct DBusValidationTests {
    @Test("object paths follow the specification", arguments: ["/", "/org/bluez/hci0", "/a_b/C9"])
    func validPaths(text: String) throws {
        #expect(try DBusObjectPath(text).rawValue == text)
    }

    @Test("malformed object paths are refused with the reason", arguments: [
        ("", "does not start with '/'"),
        ("org/bluez", "does not start with '/'"),
        ("/org/", "ends with '/'"),
        ("/org//bluez", "empty element"),
        ("/org/blue-z", "'-'"),
        ("/org/blu\u{0}ez", "byte 0x0"),
        ("/caf\u{E9}", "byte 0xC3"),
    ])
    func malformedPaths(text: String, reason: String) {
        let error = #expect(throws: DBusError.self) { try DBusObjectPath(text) }

        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
    }

    @Test("interface, member and bus names are checked", arguments: [
        ("interface", "org.bluez.LEAdvertisement1", true),
        ("interface", "bluez", false),
        ("interface", "org.1bluez", false),
        ("interface", "org..bluez", false),
        ("member", "RegisterAdvertisement", true),
        ("member", "Register.Advertisement", false),
        ("member", "9Lives", false),
        ("member", "", false),
        ("bus", "org.bluez", true),
        ("bus", ":1.42", true),
        ("bus", "org.blue-z", true),
        ("bus", "org", false),
        ("bus", ":1.4\u{0}2", false),
    ])
    func names(kind: String, name: String, valid: Bool) {
        let check: () throws(DBusError) -> Void = switch kind {
        case "interface": { () throws(DBusError) in try DBusName.validateInterface(name) }
        case "member": { () throws(DBusError) in try DBusName.validateMember(name) }
        default: { () throws(DBusError) in try DBusName.validateBusName(name) }
        }

        let outcome = Result { try check() }

        #expect((try? outcome.get()) != nil ? valid : !valid, "\(kind) \(name.debugDescription)")
    }

    @Test("a string with a NUL is refused, and the error does not repeat the string (it may be a secret)")
    func nulInString() {
        let error = #expect(throws: DBusError.self) { try DBusValue.string("hunter\u{0}22").validate() }

        #expect(error?.message == "a string holds a NUL character (at byte 6), which D-Bus does not allow")
    }

    @Test("an array element of another type than declared is refused")
    func arrayElementMismatch() {
        let value = DBusValue.array(.string, [.string("ok"), .int32(1)])

        let error = #expect(throws: DBusError.self) { try value.validate() }

        #expect(error?.message == "array of 's' holds an element of type 'i'")
    }

    @Test("a dictionary keyed by a container type is refused")
    func containerDictionaryKey() {
        let value = DBusValue.dictionary(key: .variant, value: .string, [])

        let error = #expect(throws: DBusError.self) { try value.validate() }

        #expect(error?.name == .invalidSignature)
    }

    @Test("an empty structure is refused")
    func emptyStructure() {
        #expect(throws: DBusError.self) { try DBusValue.structure([]).validate() }
    }

    @Test("variants nested 64 deep are refused, 63 accepted")
    func variantDepth() throws {
        func nest(_ depth: Int) -> DBusValue {
            (0..<depth).reduce(DBusValue.int32(1)) { inner, _ in .variant(inner) }
        }

        try nest(63).validate()
        #expect(throws: DBusError.self) { try nest(65).validate() }
    }

    @Test("a message body carries the signature of its values")
    func messageSignature() {
        let message = DBusMessage.methodCall(
            destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.LEAdvertisingManager1",
            member: "RegisterAdvertisement", body: [.objectPath("/ad0"), .variantDictionary([:])])

        #expect(message.signature.text == "oa{sv}")
    }
}
