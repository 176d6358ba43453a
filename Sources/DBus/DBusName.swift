/// The D-Bus naming rules for bus, interface, member and error names, checked before any name
/// reaches libdbus (which aborts the process on a malformed one).
public enum DBusName {
    /// The longest name the specification allows, in bytes.
    public static let maximumLength = 255

    /// Checks an interface name such as `org.bluez.LEAdvertisement1`.
    public static func validateInterface(_ name: String) throws(DBusError) {
        if let problem = dottedNameProblem(name, allowHyphen: false, allowLeadingDigit: false) {
            throw .invalidArgs("interface name \"\(name)\" \(problem)")
        }
    }

    /// Checks an error name such as `org.bluez.Error.Failed` (same rules as an interface name).
    public static func validateErrorName(_ name: String) throws(DBusError) {
        if let problem = dottedNameProblem(name, allowHyphen: false, allowLeadingDigit: false) {
            throw .invalidArgs("error name \"\(name)\" \(problem)")
        }
    }

    /// Checks a member (method or signal) name such as `RegisterAdvertisement`.
    public static func validateMember(_ name: String) throws(DBusError) {
        let bytes = Array(name.utf8)
        let problem: String? =
            if bytes.isEmpty { "is empty" }
            else if bytes.count > maximumLength { "is longer than \(maximumLength) bytes" }
            else if bytes[0] >= UInt8(ascii: "0") && bytes[0] <= UInt8(ascii: "9") { "starts with a digit" }
            else if let bad = bytes.first(where: { !isWordByte($0) }) { "has \(describe(bad))" }
            else { nil }
        if let problem { throw .invalidArgs("member name \"\(name)\" \(problem)") }
    }

    /// Checks a bus name: a unique name such as `:1.42` or a well-known name such as `org.bluez`.
    public static func validateBusName(_ name: String) throws(DBusError) {
        let problem: String? =
            if name.hasPrefix(":") {
                dottedNameProblem(String(name.dropFirst()), allowHyphen: true, allowLeadingDigit: true)
            } else {
                dottedNameProblem(name, allowHyphen: true, allowLeadingDigit: false)
            }
        if let problem { throw .invalidArgs("bus name \"\(name)\" \(problem)") }
    }

    static func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "_")
    }

    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    private static func dottedNameProblem(_ name: String, allowHyphen: Bool, allowLeadingDigit: Bool) -> String? {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty else { return "is empty" }
        guard bytes.count <= maximumLength else { return "is longer than \(maximumLength) bytes" }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return "needs at least two elements separated by '.'" }
        for element in elements {
            guard let first = element.first else { return "has an empty element" }
            if !allowLeadingDigit && first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9") {
                return "has an element that starts with a digit"
            }
            for byte in element where !(isWordByte(byte) || (allowHyphen && byte == UInt8(ascii: "-"))) {
                return "has \(describe(byte))"
            }
        }
        return nil
    }
}
