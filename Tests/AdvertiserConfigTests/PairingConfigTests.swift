import AdvertiserConfig
import Peripheral
import Testing

@Suite("The [pairing] table")
struct PairingConfigTests: ReadsConfigText {
    @Test("without the table, centrals pair with a passkey shown to the owner (never just works) in 120-second windows of 3 attempts each")
    func defaults() throws {
        let config = try parse("")

        #expect(config.pairing == PairingConfig(method: .passkey, window: .seconds(120), attempts: 3))
    }

    @Test("each method is read by its name, and off is no method", arguments: [
        ("off", nil), ("just-works", PairingMethod.justWorks), ("passkey", .passkey), ("numeric-comparison", .numericComparison),
    ])
    func method(name: String, expected: PairingMethod?) throws {
        let config = try parse("[pairing]\nmethod = \"\(name)\"\n")

        #expect(config.pairing.method == expected)
    }

    @Test("the window's length and its attempts are read as given")
    func windowAndAttempts() throws {
        let config = try parse("[pairing]\nwindow_seconds = 30\nattempts = 1\n")

        #expect(config.pairing.window == .seconds(30))
        #expect(config.pairing.attempts == 1)
    }

    @Test("what the table cannot say is refused, naming the key", arguments: [
        ("method = \"pin\"", "test.toml:2: pairing.method: \"pin\" is not a pairing method; use off, just-works, passkey, numeric-comparison"),
        ("window_seconds = 0", "test.toml:2: pairing.window_seconds: is 0; it must be between 1 and 3600"),
        ("window_seconds = 3601", "test.toml:2: pairing.window_seconds: is 3601; it must be between 1 and 3600"),
        ("attempts = 0", "test.toml:2: pairing.attempts: is 0; it must be between 1 and 100"),
        ("timeout = 5", "test.toml:2: pairing.timeout: unknown key; known keys: attempts, method, window_seconds"),
    ])
    func refused(line: String, message: String) {
        #expect(error("[pairing]\n\(line)\n") == message)
    }

    @Test("a pairing that is not a table is refused")
    func notATable() {
        #expect(error("pairing = \"off\"\n") == "test.toml:1: pairing: must be a table, not string")
    }
}
