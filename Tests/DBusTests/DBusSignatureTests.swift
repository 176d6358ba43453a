import Testing

@testable import DBus

@Suite("Signatures")
struct DBusSignatureTests {
    @Test("every basic type code parses to its type and prints back")
    func basicTypesRoundTrip() throws {
        let text = "ybnqiuxtdsogv"

        let signature = try DBusSignature(text)

        #expect(signature.types == [.byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64,
                                    .double, .string, .objectPath, .signature, .variant])
        #expect(signature.text == "ybnqiuxtdsogv")
    }

    @Test("containers nest and print back exactly", arguments: [
        "a{sv}", "aa{oa{sa{sv}}}", "(ia(sv)a{ys})", "a(yv)", "a{ya(by)}", "aay", "(hq)",
    ])
    func containersRoundTrip(text: String) throws {
        let signature = try DBusSignature(text)

        #expect(signature.text == text)
        #expect(signature.types.count == 1)
    }

    @Test("malformed signatures are refused with the reason", arguments: [
        ("a", "ends after 'a'"),
        ("a{vs}", "keys must be basic types"),
        ("a{sss}", "exactly one key and one value"),
        ("()", "empty structure"),
        ("(ii", "')' is missing"),
        ("z", "'z', which is not a type code"),
        ("{sv}", "'{', which is not a type code"),
    ])
    func malformedSignaturesAreRefused(text: String, reason: String) {
        let error = #expect(throws: DBusError.self) { try DBusSignature(text) }

        #expect(error?.name == .invalidSignature)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
    }

    @Test("a signature over 255 bytes is refused")
    func overlongSignatureIsRefused() {
        let error = #expect(throws: DBusError.self) { try DBusSignature(String(repeating: "i", count: 256)) }

        #expect(error?.message.contains("256 bytes long") == true)
    }

    @Test("arrays nested 33 deep are refused, 32 deep accepted")
    func arrayDepthLimit() throws {
        let ok = try DBusSignature(String(repeating: "a", count: 32) + "y")
        let error = #expect(throws: DBusError.self) { try DBusSignature(String(repeating: "a", count: 33) + "y") }

        #expect(ok.types.count == 1)
        #expect(error?.message.contains("nests arrays deeper than 32") == true)
    }

    @Test("structures nested 33 deep are refused")
    func structDepthLimit() {
        let text = String(repeating: "(", count: 33) + "i" + String(repeating: ")", count: 33)

        let error = #expect(throws: DBusError.self) { try DBusSignature(text) }

        #expect(error?.message.contains("nests structures deeper than 32") == true)
    }
}
