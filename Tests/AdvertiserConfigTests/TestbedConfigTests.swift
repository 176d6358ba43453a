import AdvertiserConfig
import Foundation
import Testing

/// The configs the test bed's scenarios run bleadvd with (`testbed/configs/`) are read as bleadvd
/// reads them, here, without a guest: a key the parser stops taking breaks this test, not a
/// scenario forty minutes into `make test`.
@Suite("The test bed's configs")
struct TestbedConfigTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("testbed/configs")
    static let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".toml") }.sorted()

    @Test("the scenarios' configs are in testbed/configs")
    func configsAreThere() {
        #expect(Self.names.count >= 12, "\(Self.names)")
    }

    @Test("each is a config bleadvd takes", arguments: names)
    func parses(_ name: String) throws {
        let config = try ConfigParser.load(path: Self.folder.appendingPathComponent(name).path)

        #expect(!config.advertisements.isEmpty || !config.services.isEmpty)
    }
}
