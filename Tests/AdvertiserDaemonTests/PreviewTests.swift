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
