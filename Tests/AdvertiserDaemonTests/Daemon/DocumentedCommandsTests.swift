import AdvertiserConfig
import Foundation
import TestSupport
import Testing

/// What the README and the user's guide tell a person to type still works as shown: each config
/// block is a config bleadvd takes, and each `bleadvctl` command line is one bleadvctl accepts.
@Suite("the commands and configs the README and docs/GUIDE.md show")
struct DocumentedCommandsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let documents = ["README.md", "docs/GUIDE.md"]

    /// A fenced block of a document: its language, its text and where it starts.
    struct Block: CustomTestStringConvertible, Sendable {
        let document: String
        let line: Int
        let language: String
        let text: String
        var testDescription: String { "\(document):\(line)" }
    }

    /// Every fenced block of the documents.
    static func blocks(_ language: String) -> [Block] {
        documents.flatMap { document -> [Block] in
            guard let text = try? String(contentsOf: root.appendingPathComponent(document), encoding: .utf8) else { return [] }
            var blocks: [Block] = []
            var open: (line: Int, language: String, lines: [String])?
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if line.hasPrefix("```") {
                    if let block = open {
                        blocks.append(Block(document: document, line: block.line, language: block.language, text: block.lines.joined(separator: "\n")))
                        open = nil
                    } else {
                        open = (index + 1, String(line.dropFirst(3)), [])
                    }
                } else {
                    open?.lines.append(String(line))
                }
            }
            return blocks.filter { $0.language == language }
        }
    }

    /// A shell block's bleadvctl command lines, as a person would run them: the comment after a
    /// command and a pipe's later commands dropped, a command substitution given a value
    /// (`$(cat ...)` reads hardware this machine lacks). A synopsis line (`on [NAME...]`,
    /// `set NAME KEY=VALUE...`) is a pattern, not a command: left out.
    static func commands(_ block: Block) -> [String] {
        block.text.split(separator: "\n").compactMap { raw -> String? in
            var line = String(raw)
            if let comment = line.range(of: "  #") { line = String(line[..<comment.lowerBound]) }
            if let pipe = line.range(of: " | ") { line = String(line[..<pipe.lowerBound]) }
            line = line.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("exec ") { line = String(line.dropFirst(5)) }
            guard line.hasPrefix("bleadvctl ") else { return nil }
            line = line.replacingOccurrences(of: #""?\$\([^)]*\)"?"#, with: "20", options: .regularExpression)
            guard line.range(of: #"\[|\.\.\.|\b[A-Z]{3,}\b"#, options: .regularExpression) == nil else { return nil }
            return line
        }
    }

    static let configs = blocks("toml")
    static let shellBlocks = blocks("sh").filter { !commands($0).isEmpty }

    @Test("the documents show configs and bleadvctl commands to check")
    func thereIsSomethingToCheck() {
        #expect(Self.configs.count >= 8)
        #expect(Self.shellBlocks.flatMap(Self.commands).count >= 10)
    }

    @Test("each config block is a config bleadvd takes", arguments: configs)
    func configBlockParses(_ block: Block) {
        #expect(throws: Never.self, "\(block.document):\(block.line)") {
            _ = try ConfigParser.parse(block.text, file: "\(block.document):\(block.line)")
        }
    }

    @Test("each bleadvctl command line is one bleadvctl accepts: without a daemon it says bleadvd is not running, never a usage error", arguments: shellBlocks)
    func commandLinesParse(_ block: Block) async throws {
        let bus = try await PrivateBus()
        let directory = URL(fileURLWithPath: product("bleadvctl")).deletingLastPathComponent().path
        for command in Self.commands(block) {
            let result = try await runProgram("/bin/sh", ["-c", command], environment: [
                "DBUS_SYSTEM_BUS_ADDRESS": bus.address, "PATH": "\(directory):/usr/bin:/bin",
            ])

            // bleadvctl's usage errors end "(see 'bleadvctl --help')".
            #expect(!result.errors.contains("(see 'bleadvctl"), "\(block.document):\(block.line): \(command): \(result.errors)")
            if command.hasPrefix("bleadvctl preview") {
                // Offline: it previews, or says the file it was given is not on this machine.
                #expect(result.status == 0 || result.errors.contains("the config file does not exist"), "\(command): \(result.errors)")
            } else {
                #expect(result.status == 3, "\(block.document):\(block.line): \(command) exited \(result.status): \(result.errors)")
            }
        }
    }
}
