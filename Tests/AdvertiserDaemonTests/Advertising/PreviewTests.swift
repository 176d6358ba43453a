import Foundation
import TestSupport
import Testing

@Suite("bleadvctl preview")
struct PreviewTests {
    func preview(_ config: String) async throws -> ProgramResult {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("preview-\(UUID().uuidString).toml").path
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await runProgram(product("bleadvctl"), ["preview", "--config", path])
    }

    @Test("an encrypted BTHome sensor is previewed at the size it has on air, counter and tag included")
    func encryptedSize() async throws {
        let sensor = "[advertisement.kitchen.bthome]\ntemperature = 21.5\n"

        let plain = try await preview(sensor)
        let encrypted = try await preview(sensor + "encryption_key = \"231d39c1d7cc1ab1aee224cd096db932\"\n")

        #expect(plain.output.contains("advertising data: 10 of 31 bytes"), "\(plain.output)")
        #expect(encrypted.output.contains("advertising data: 18 of 31 bytes"), "\(encrypted.output)")
        #expect(encrypted.output.contains("encrypted BTHome"))
        #expect(!encrypted.output.contains("231d39c1"))
    }

    /// The bytes btmon captured on btvirt -L (LE-only) controllers, bookworm's and trixie's
    /// kernels alike (docs/RELIABILITY.md, "Other stacks").
    @Test("data without flags is also previewed as an LE-only adapter sends it, with the kernel's flags in front")
    func leOnlyVariant() async throws {
        let broadcast = "[advertisement.b]\ntype = \"broadcast\"\nmanufacturer_data = { \"0xFFFF\" = \"0e0f\" }\n"

        let result = try await preview(broadcast)

        #expect(result.output.contains("  advertising data: 6 of 31 bytes: 05ffffff0e0f\n"), "\(result.output)")
        #expect(result.output.contains("  on an LE-only adapter: 9 of 31 bytes: 02010405ffffff0e0f "), "\(result.output)")
    }

    /// btmon on btvirt -L controllers (kernels 6.1, 6.12 and 7.2): flags in front of 28 bytes,
    /// none in front of 29 or 31.
    @Test("data too long for the kernel's flags is previewed as sent unchanged on an LE-only adapter")
    func leOnlyVariantWithoutRoom() async throws {
        let broadcast = "[advertisement.b]\ntype = \"broadcast\"\nmanufacturer_data = { \"0xFFFF\" = \"0102030405060708090a0b0c0d0e0f10111213141516171819\" }\n"

        let result = try await preview(broadcast)

        #expect(result.output.contains("  advertising data: 29 of 31 bytes: 1cffffff0102"), "\(result.output)")
        #expect(result.output.contains("  on an LE-only adapter: the same (no room for the flags 020104 the kernel adds to data of up to 28 bytes)\n"), "\(result.output)")
    }

    @Test("a scan response is previewed with its own fields, the name between its lists and its raw data")
    func scanResponseFields() async throws {
        let tag = "[advertisement.t]\ntype = \"broadcast\"\nlocal_name = \"Tag\"\n[advertisement.t.scan_response]\n"
            + "manufacturer_data = { \"0xFFFF\" = \"0506\" }\ndata = { \"0x26\" = \"01\" }\n"

        let result = try await preview(tag)

        #expect(result.output.contains("  scan response: 14 of 31 bytes: 05ffffff050604095461670226" + "01\n"), "\(result.output)")
        #expect(result.output.contains("    05ffffff0506  type 0xff  6 bytes  scan_response.manufacturer_data 0xFFFF\n"), "\(result.output)")
    }

    @Test("data past 31 bytes with a secondary channel is previewed as extended, against 251 bytes")
    func extendedData() async throws {
        let long = "[advertisement.l]\ntype = \"broadcast\"\nsecondary_channel = \"1M\"\nmanufacturer_data = { \"0xFFFF\" = \"" + String(repeating: "ab", count: 40) + "\" }\n"

        let result = try await preview(long)

        #expect(result.output.contains("  advertising data: 44 of 251 bytes: 2bffffffabab"), "\(result.output)")
        #expect(result.output.contains("  extended advertising on the 1M PHY: ADV_EXT_IND"), "\(result.output)")
        #expect(!result.output.contains("problems"), "\(result.output)")
    }

    @Test("data with flags of its own has no LE-only variant: the kernel adds none")
    func noLEOnlyVariantWithFlags() async throws {
        let discoverable = "[advertisement.p]\ntype = \"peripheral\"\ndiscoverable = true\nservice_uuids = [\"180D\"]\nmanufacturer_data = { \"0xFFFF\" = \"0c0d\" }\n"

        let result = try await preview(discoverable)

        #expect(result.output.contains("advertising data: 13 of 31 bytes: 03030d1805ffffff0c0d020106\n"), "\(result.output)")
        #expect(!result.output.contains("LE-only"), "\(result.output)")
    }

    @Test("a file that crashes the TOML parser (found by libFuzzer) is refused with exit 2 and one line, not a crash")
    func parserCrash() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("crash-\(UUID().uuidString).toml").path
        try "\n[\n\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }

        let result = try await runProgram(product("bleadvctl"), ["preview", "--config", path])

        #expect(result.status == 2)
        #expect(result.errors == "bleadvctl: \(path): crashes the TOML parser (signal 6 in a child process; nothing was read): look for a table header, key, array or inline table cut short or not closed, e.g. a '[' at the end of a line or '[ }'\n")
    }
}
