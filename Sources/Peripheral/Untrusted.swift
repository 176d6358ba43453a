/// Text that came from outside (a config file, a D-Bus caller, BlueZ, the command line) made
/// safe to show: on one line, with nothing a terminal or the journal would act on.
///
/// Control characters (C0, DEL, C1), line and paragraph separators, and the invisible
/// direction marks and overrides are written as escapes (`\n`, `\u{1B}`, `\u{202E}`). What
/// is escaped is only ever shown, never read back.
public enum Untrusted {
    /// The most Unicode scalars ``shown(_:limit:)`` keeps by default: more than any name, key
    /// or value of the config needs.
    public static let defaultLimit = 64

    /// `text` escaped (see ``Untrusted``), whole however long.
    public static func escaped(_ text: some StringProtocol) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return String(text) }
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars { append(scalar, to: &result) }
        return result
    }

    /// `text` escaped, and cut after `limit` Unicode scalars (not characters: one letter with
    /// a million combining marks is one character), with how long it was.
    public static func shown(_ text: some StringProtocol, limit: Int = defaultLimit) -> String {
        let (start, total) = cut(text, limit)
        return total > limit ? start + "... (\(total) characters)" : start
    }

    /// `"text"`, escaped and cut as ``shown(_:limit:)`` does, with `"` and `\` inside escaped
    /// too (`\"`, `\\`): the quotes end where the text does, so a value cannot forge what
    /// follows it on the line.
    public static func quoted(_ text: some StringProtocol, limit: Int = defaultLimit) -> String {
        let (start, total) = cut(text, limit, quoting: true)
        return total > limit ? "\"\(start)...\" (\(total) characters)" : "\"\(start)\""
    }

    /// The first `limit` scalars of `text`, escaped, and how many scalars it has.
    private static func cut(_ text: some StringProtocol, _ limit: Int, quoting: Bool = false) -> (String, Int) {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count < limit {
                if quoting && (scalar == "\"" || scalar == "\\") { result += "\\" }
                append(scalar, to: &result)
            }
            count += 1
        }
        return (result, count)
    }

    /// Whether `scalar` is shown as an escape.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true  // C0, DEL, C1 (ESC, CSI, NEL, ...)
        case 0x2028, 0x2029: true  // line and paragraph separators
        case 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069: true  // direction marks, embeddings, overrides, isolates
        default: false
        }
    }

    private static func append(_ scalar: Unicode.Scalar, to result: inout String) {
        guard needsEscape(scalar) else {
            result.unicodeScalars.append(scalar)
            return
        }
        switch scalar {
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        default: result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        }
    }
}

/// How log lines and messages name a central: its address as BlueZ gave it (escaped, as text
/// from outside is), or "a central" when BlueZ did not say which.
public enum Central {
    /// `address`, escaped, or "a central" when it is empty.
    public static func named(_ address: String) -> String {
        address.isEmpty ? "a central" : Untrusted.escaped(address)
    }
}
