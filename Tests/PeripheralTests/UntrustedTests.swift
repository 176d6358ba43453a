import Peripheral
import Testing

/// Text from outside, made safe for a log line or a terminal.
@Suite("Untrusted text")
struct UntrustedTests {
    @Test("a newline cannot start a line of its own (a forged journal priority)")
    func newlineIsEscaped() {
        let shown = Untrusted.escaped("T1\n<0>bleadvd: FORGED")

        #expect(shown == "T1\\n<0>bleadvd: FORGED")
    }

    @Test("terminal escapes, C1 controls, line separators and direction overrides are escaped", arguments: [
        ("\u{1B}]0;PWNED\u{07}\u{1B}[2J", "\\u{1B}]0;PWNED\\u{7}\\u{1B}[2J"),
        ("a\u{9B}31m", "a\\u{9B}31m"),
        ("a\u{85}b\u{2028}c\u{2029}d", "a\\u{85}b\\u{2028}c\\u{2029}d"),
        ("evil\u{202E}txt.exe", "evil\\u{202E}txt.exe"),
        ("\u{2066}x\u{2069}\u{200F}", "\\u{2066}x\\u{2069}\\u{200F}"),
        ("tab\there\r", "tab\\there\\r"),
    ])
    func controlsAreEscaped(text: String, expected: String) {
        #expect(Untrusted.escaped(text) == expected)
    }

    @Test("printable text, accents and emoji included, is left as it is")
    func printableIsUnchanged() {
        #expect(Untrusted.escaped("Küche 21.5 °C 🌡") == "Küche 21.5 °C 🌡")
    }

    @Test("a quote or a backslash inside quoted text is escaped, so the quotes end where the text does")
    func quotedEscapesQuotesAndBackslashes() {
        #expect(Untrusted.quoted(#"sofa" central=AA:BB"#) == #""sofa\" central=AA:BB""#)
        #expect(Untrusted.quoted(#"a\b"#) == #""a\\b""#)
    }

    @Test("the limit counts Unicode scalars: one letter with 300,000 combining marks is cut")
    func limitCountsScalars() {
        let text = "e" + String(repeating: "\u{301}", count: 300_000)

        let shown = Untrusted.quoted(text, limit: 24)

        #expect(shown.unicodeScalars.count < 60)
        #expect(shown.hasSuffix("...\" (300001 characters)"))
    }
}
