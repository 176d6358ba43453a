@testable import AdvertiserDaemon
import Foundation
import Glibc
import Peripheral
import Testing

/// What an attacker (or a bad restore) can leave in the state directory where encrypted
/// BTHome's counters are kept: each is refused at once with the file and what to do, never
/// read as a smaller counter (a repeated nonce), and never blocks the daemon.
@Suite("Hostile files in the state directory")
struct StateDirectoryTests {
    static let key = BTHome.Key(hex: "231d39c1d7cc1ab1aee224cd096db932")!

    /// A counter directory that exists, and the file its key's counter lives in.
    static func directory() throws -> CounterDirectory {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return CounterDirectory(path: path)
    }

    static func refusal(_ counters: CounterDirectory, _ what: String) -> PeripheralError {
        PeripheralError(
            .failed,
            "\(counters.file(for: key)) \(what), so the BTHome encryption counter is unknown and nothing is sent with that key; "
                + "restore the file from a backup, or configure a new encryption_key (see bleadvd(8), STATE)")
    }

    @Test("a FIFO at the counter's file is refused at once instead of blocking on open")
    func fifoIsRefused() throws {
        let counters = try Self.directory()
        #expect(mkfifo(counters.file(for: Self.key), 0o600) == 0)

        #expect(throws: Self.refusal(counters, "is not a regular file")) { try counters.next(for: Self.key) }
    }

    @Test("a symbolic link at the counter's file is refused, not followed")
    func linkIsRefused() throws {
        let counters = try Self.directory()
        #expect(symlink("/dev/zero", counters.file(for: Self.key)) == 0)

        #expect(throws: Self.refusal(counters, "is a symbolic link")) { try counters.next(for: Self.key) }
    }

    @Test("leading zeros beyond what bleadvd writes are refused, never read as a smaller counter", arguments: [
        String(repeating: "0", count: 36) + "5000\n", "05000\n",
    ])
    func paddedCounterIsRefused(text: String) throws {
        let counters = try Self.directory()
        try text.write(toFile: counters.file(for: Self.key), atomically: true, encoding: .utf8)

        #expect(throws: PeripheralError.self) { try counters.next(for: Self.key) }
    }

    @Test("anything but one number and one newline is corrupt", arguments: [
        "", "\n", "5000", "5000\n\n", " 5000\n", "5000 \n", "+5000\n", "-1\n", "0x10\n", "4294967296\n", "5000\n7\n", "٥\n",
    ])
    func malformedCounterIsRefused(text: String) throws {
        let counters = try Self.directory()
        try text.write(toFile: counters.file(for: Self.key), atomically: true, encoding: .utf8)

        #expect(throws: Self.refusal(counters, text.utf8.count > 11 ? "holds \(text.utf8.count) bytes" : "does not hold a counter as bleadvd writes it")) {
            try counters.next(for: Self.key)
        }
    }

    @Test("every text of up to 4 bytes from digits, signs, spaces, x and newlines is read only if it is a number as bleadvd writes it")
    func parseAcceptsOnlyWhatIsWritten() {
        let alphabet = Array("0159+- x\n".utf8)
        var texts: [[UInt8]] = [[]]
        var accepted = 0
        for _ in 1...4 {
            texts = texts.flatMap { text in alphabet.map { text + [$0] } }
            for text in texts {
                let value = CounterDirectory.parse(text[...])

                #expect(value.map { Array("\($0)\n".utf8) == text } ?? true, "\(text) read as \(value!)")
                if value != nil { accepted += 1 }
            }
        }
        #expect(accepted == 4 + 3 * 4 + 3 * 4 * 4)
    }

    @Test("a counter exactly as bleadvd writes it is read, and counting goes on from it")
    func wellFormedCounterIsRead() throws {
        let counters = try Self.directory()
        try "5000\n".write(toFile: counters.file(for: Self.key), atomically: true, encoding: .utf8)

        let next = try counters.next(for: Self.key)

        #expect(next == 5000)
    }

    @Test("a FIFO left where the new file is written is replaced, not written into")
    func fifoAtTheTemporaryFileIsReplaced() throws {
        let counters = try Self.directory()
        #expect(mkfifo(counters.file(for: Self.key) + ".new", 0o600) == 0)

        let first = try counters.next(for: Self.key)

        #expect(first == 0)
        #expect(try String(contentsOfFile: counters.file(for: Self.key), encoding: .utf8) == "\(CounterDirectory.block)\n")
    }
}

/// The record of the bonds bleadvd's windows made: what `forget` without `--any` may remove.
/// Anything but what bleadvd writes is refused with the file named, never read as some other
/// list (a line smuggled in would let a bond be forgotten that bleadvd never made).
@Suite("The record of the bonds bleadvd made")
struct BondRecordTests {
    static func record() throws -> BondRecord {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString)").path
        return BondRecord(directory: path)
    }

    @Test("with no file, no bond is bleadvd's; the first bond creates the directory and the file")
    func firstBondCreatesTheFile() throws {
        let record = try Self.record()
        #expect(try record.centrals() == [])

        try record.add("AA:BB:CC:DD:EE:FF")

        #expect(try String(contentsOfFile: record.file, encoding: .utf8) == "AA:BB:CC:DD:EE:FF\n")
    }

    @Test("a central that bonds again is kept once, as the newest")
    func bondAgainKeptOnce() throws {
        let record = try Self.record()
        try record.add("AA:BB:CC:DD:EE:FF")
        try record.add("11:22:33:44:55:66")

        try record.add("AA:BB:CC:DD:EE:FF")

        #expect(try record.centrals() == ["11:22:33:44:55:66", "AA:BB:CC:DD:EE:FF"])
    }

    @Test("at the most addresses kept, a new bond drops the oldest")
    func oldestDropped() throws {
        let record = try Self.record()
        let addresses = (0..<BondRecord.most).map { String(format: "00:00:00:00:%02X:%02X", $0 >> 8, $0 & 0xFF) }
        try FileManager.default.createDirectory(atPath: record.directory, withIntermediateDirectories: true)
        try addresses.map { $0 + "\n" }.joined().write(toFile: record.file, atomically: true, encoding: .utf8)

        try record.add("AA:BB:CC:DD:EE:FF")

        #expect(try record.centrals() == Array(addresses.dropFirst()) + ["AA:BB:CC:DD:EE:FF"])
    }

    @Test("a file that is not what bleadvd writes is refused, naming the file", arguments: [
        "AA:BB:CC:DD:EE:FF", "aa:bb:cc:dd:ee:ff\n", "AA:BB:CC:DD:EE:FF\n\n", " AA:BB:CC:DD:EE:FF\n", "AA:BB:CC:DD:EE:FF \n",
        "AA:BB:CC:DD:EE:FF\nphone\n", "AA-BB-CC-DD-EE-FF\n",
    ])
    func malformedRecordRefused(text: String) throws {
        let record = try Self.record()
        try FileManager.default.createDirectory(atPath: record.directory, withIntermediateDirectories: true)
        try text.write(toFile: record.file, atomically: true, encoding: .utf8)

        #expect { try record.centrals() } throws: { ($0 as? PeripheralError)?.message.hasPrefix(record.file + " ") == true }
    }

    @Test("a symbolic link, a FIFO or a file longer than the most addresses is refused at once", arguments: ["link", "fifo", "long"])
    func hostileRecordRefused(kind: String) throws {
        let record = try Self.record()
        try FileManager.default.createDirectory(atPath: record.directory, withIntermediateDirectories: true)
        switch kind {
        case "link": #expect(symlink("/dev/zero", record.file) == 0)
        case "fifo": #expect(mkfifo(record.file, 0o600) == 0)
        default: try String(repeating: "AA:BB:CC:DD:EE:FF\n", count: BondRecord.most + 1).write(toFile: record.file, atomically: true, encoding: .utf8)
        }

        #expect(throws: PeripheralError.self) { try record.centrals() }
    }
}
