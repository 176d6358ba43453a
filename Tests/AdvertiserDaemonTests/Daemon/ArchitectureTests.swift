import Foundation
import Testing

/// The house stays easy to walk: ARCHITECTURE describes every folder of the daemon, the tests
/// have the sources' folders, and no source file grows past what a reader takes in.
@Suite("the daemon's folders and files")
struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// The most lines a source file has.
    static let lineLimit = 500

    /// The folders directly under `path` (from the repository's root), sorted.
    static func folders(_ path: String) throws -> [String] {
        let url = root.appendingPathComponent(path)
        return try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: [.isDirectoryKey])
            .filter { (try? $0.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true }
            .map(\.lastPathComponent).sorted()
    }

    /// ARCHITECTURE's section on the daemon's folders.
    static func folderSection() throws -> Substring {
        let text = try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let start = try #require(text.range(of: "## The daemon's folders"))
        let end = text[start.upperBound...].range(of: "\n## ")?.lowerBound ?? text.endIndex
        return text[start.lowerBound..<end]
    }

    @Test("every folder of Sources/AdvertiserDaemon has its entry in ARCHITECTURE's section on them")
    func everySourceFolderIsDescribed() throws {
        let section = try Self.folderSection()

        let missing = try Self.folders("Sources/AdvertiserDaemon").filter { !section.contains("- `\($0)/`:") }

        #expect(missing.isEmpty, "not in docs/ARCHITECTURE.md's \"The daemon's folders\": \(missing)")
    }

    @Test("every folder of the daemon's tests is named after a folder of its sources")
    func testFoldersMirrorSourceFolders() throws {
        let sources = Set(try Self.folders("Sources/AdvertiserDaemon"))

        let strays = try Self.folders("Tests/AdvertiserDaemonTests").filter { !sources.contains($0) }

        #expect(strays.isEmpty, "test folders with no source folder of their name: \(strays)")
    }

    @Test("the daemon's tests keep no file beside the folders")
    func noTestOutsideTheFolders() throws {
        let url = Self.root.appendingPathComponent("Tests/AdvertiserDaemonTests")

        let loose = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".swift") }

        #expect(loose.isEmpty, "put these in the folder of what they test: \(loose)")
    }

    @Test("no Swift file under Sources has more than 500 lines")
    func noLongSourceFile() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }

        let long = try files.compactMap { file -> String? in
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count - 1
            return lines > Self.lineLimit ? "\(file.path.dropFirst(sources.path.count + 1)): \(lines)" : nil
        }

        #expect(!files.isEmpty)
        #expect(long.isEmpty, "split these: \(long)")
    }
}
