import AdvertiserDaemon
import Foundation
import Peripheral
import Testing

@Suite("Encrypted BTHome's counters, kept in the state directory")
struct CounterDirectoryTests {
    static let key = BTHome.Key(hex: "231d39c1d7cc1ab1aee224cd096db932")!
    static let other = BTHome.Key(hex: "00112233445566778899aabbccddeeff")!

    /// A fresh directory that does not exist yet, inside a temporary one.
    static func place() throws -> String {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("counters-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        return parent.appendingPathComponent("state").path
    }

    @Test("counters for a key count up from 0")
    func countsUp() throws {
        let counters = CounterDirectory(path: try Self.place())

        let values = try (0..<3).map { _ in try counters.next(for: Self.key) }

        #expect(values == [0, 1, 2])
    }

    @Test("after a restart (or a crash) no counter handed out before comes again")
    func neverRepeatsAcrossRestarts() throws {
        let path = try Self.place()
        let first = CounterDirectory(path: path)
        let before = try (0..<3).map { _ in try first.next(for: Self.key) }

        let after = try CounterDirectory(path: path).next(for: Self.key)

        #expect(after > before.max()!)
        #expect(after == CounterDirectory.block)
    }

    @Test("a run that used up its block reserves the next before handing one out")
    func reservesTheNextBlock() throws {
        let path = try Self.place()
        let counters = CounterDirectory(path: path)
        for _ in 0..<CounterDirectory.block { _ = try counters.next(for: Self.key) }

        let next = try counters.next(for: Self.key)

        #expect(next == CounterDirectory.block)
        #expect(try String(contentsOfFile: counters.file(for: Self.key), encoding: .utf8) == "\(2 * CounterDirectory.block)\n")
    }

    @Test("each key has its own counter and its own file, named by its check value, never the key")
    func perKey() throws {
        let counters = CounterDirectory(path: try Self.place())
        _ = try counters.next(for: Self.key)

        let other = try counters.next(for: Self.other)

        #expect(other == 0)
        #expect(counters.file(for: Self.key).hasSuffix("/bthome-\(Self.key.checkValue).counter"))
        #expect(counters.file(for: Self.key) != counters.file(for: Self.other))
        let names = try FileManager.default.contentsOfDirectory(atPath: counters.path)
        #expect(!names.joined().contains("231d39c1"))
    }

    @Test("the directory is created readable by its owner only")
    func directoryMode() throws {
        let counters = CounterDirectory(path: try Self.place())

        _ = try counters.next(for: Self.key)

        let mode = try FileManager.default.attributesOfItem(atPath: counters.path)[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    @Test("a place that cannot hold the counter fails with the path and the reason")
    func unwritable() throws {
        let file = try Self.place()
        try Data().write(to: URL(fileURLWithPath: file))
        let counters = CounterDirectory(path: file + "/state")

        #expect(throws: PeripheralError(.failed, "cannot read \(counters.file(for: Self.key)) (Not a directory), where the BTHome encryption counter is kept")) {
            try counters.next(for: Self.key)
        }
    }

    @Test("a file that does not hold a counter is an error, not a fresh start at 0")
    func corrupt() throws {
        let path = try Self.place()
        let counters = CounterDirectory(path: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try "garbage".write(toFile: counters.file(for: Self.key), atomically: true, encoding: .utf8)

        #expect(throws: PeripheralError.self) { try counters.next(for: Self.key) }
    }
}
