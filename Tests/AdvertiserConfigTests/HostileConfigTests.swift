import AdvertiserConfig
import Foundation
import Testing

/// Bad config files, kept in Corpus/ with the exact error each must give (Corpus/EXPECTED.tsv),
/// and the ones too big or too odd to keep in git, made here: each is refused with one line
/// naming the file (and the line and key where there is one), and nothing crashes.
@Suite("Hostile config files")
struct HostileConfigTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")

    static let expected: [(file: String, message: String)] = {
        let table = (try? String(contentsOf: corpus.appendingPathComponent("EXPECTED.tsv"), encoding: .utf8)) ?? ""
        return table.split(separator: "\n").map { line in
            let fields = line.split(separator: "\t", maxSplits: 1).map(String.init)
            return (fields[0], fields.count > 1 ? fields[1] : "")
        }
    }()

    func refusal(_ path: String) -> String? {
        do {
            _ = try ConfigParser.load(path: path)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("the corpus holds every file it lists, and more than 50")
    func corpusComplete() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter { $0.hasSuffix(".toml") }

        #expect(Set(files) == Set(Self.expected.map(\.file)))
        #expect(files.count > 50)
    }

    @Test("each file of the corpus is refused with its one-line message", arguments: expected.map(\.file))
    func corpusFile(file: String) {
        let message = Self.expected.first { $0.file == file }!.message
        let path = Self.corpus.appendingPathComponent(file).path

        let refused = refusal(path)

        #expect(refused == Self.corpus.path + "/" + message)
        #expect(refused?.contains("\n") == false)
    }

    /// A scratch folder for the files made here.
    static func scratch() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test("a name of a megabyte is refused with its size")
    func megabyteName() throws {
        let file = try Self.scratch().appendingPathComponent("name.toml")
        try "[advertisement.a]\nlocal_name = \"\(String(repeating: "x", count: 1_000_000))\"\n".write(to: file, atomically: true, encoding: .utf8)

        #expect(refusal(file.path) == "\(file.path):1: advertisement.a: local_name is 1000000 bytes; a Bluetooth device name is at most 248")
    }

    @Test("10,000 advertisements are refused with the limit")
    func tooManyAdvertisements() throws {
        let file = try Self.scratch().appendingPathComponent("many.toml")
        let text = (0..<10_000).map { "[advertisement.a\($0)]\nlocal_name = \"n\"\n" }.joined()
        try text.write(to: file, atomically: true, encoding: .utf8)

        #expect(refusal(file.path) == "\(file.path): advertisement: has 10000 advertisements; a config file may define at most 1000")
    }

    @Test("a file over 1 MiB is refused unread")
    func tooBig() throws {
        let file = try Self.scratch().appendingPathComponent("big.toml")
        try Data(repeating: UInt8(ascii: "#"), count: ConfigParser.maximumFileSize + 1).write(to: file)

        #expect(refusal(file.path) == "\(file.path): is 1048577 bytes; a config file is at most 1048576 bytes")
    }

    @Test("a directory, a FIFO, a device and a missing file are refused as what they are", arguments: [
        ("directory", "is a directory, not a config file"),
        ("fifo", "is not a regular file (a FIFO, a device or a socket); give a config file"),
        ("/dev/zero", "is not a regular file (a FIFO, a device or a socket); give a config file"),
        ("missing", "the config file does not exist"),
    ])
    func notAFile(kind: String, message: String) throws {
        let folder = try Self.scratch()
        let path = kind.hasPrefix("/") ? kind : folder.appendingPathComponent(kind).path
        if kind == "directory" { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false) }
        if kind == "fifo" { #expect(mkfifo(path, 0o600) == 0) }

        #expect(refusal(path) == "\(path): \(message)")
    }
}
