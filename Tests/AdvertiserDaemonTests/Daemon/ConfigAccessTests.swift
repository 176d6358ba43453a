import Foundation
import TestSupport
import Testing

/// Who may read what bleadvd keeps secret (#78 item 8): the config (BTHome keys, secured
/// values) and the state directory (encrypted BTHome's counters, the bond record), as the
/// package and `make install` lay them out and the unit runs the daemon. The layout is read from
/// the files that make it (the Makefile's live install and make-deb.sh's postinst, the unit,
/// the bus policy); the kernel then decides: a real file with that owner, group and mode, read
/// by `setpriv` under numeric ids standing for the names (this machine need not have user or
/// group bleadvd). The same on a real install: scenario 60 (systemd test bed).
@Suite("Who reads the config")
struct ConfigAccessTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Numeric ids standing for the names the files use (none of them in use on a test machine).
    static let uids = ["root": 0, "bleadvd": 64_990]
    static let gids = ["root": 0, "bleadvd": 64_991, "bleadvd-config": 64_992]
    /// A person who may control bleadvd: a member of a control group, not bleadvd's user.
    static let member = 64_993

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// `KEY=value` settings of the unit, space-separated values joined.
    static func unit(_ key: String) throws -> [String] {
        try text("systemd/bleadvd.service").split(separator: "\n")
            .filter { $0.hasPrefix("\(key)=") }
            .flatMap { $0.dropFirst(key.count + 1).split(separator: " ").map(String.init) }
    }

    /// The groups the bus policy lets control bleadvd (its `<policy group=…>` sections).
    static func controlGroups() throws -> [String] {
        try text("systemd/org.bleadvd.Advertiser.conf").matches(of: /<policy group="([^"]+)">/).map { String($0.1) }
    }

    /// The config's owner, group and mode as `file` sets them (`chown O:G` and `chmod MODE` of
    /// the config, in it or in the shell file it sources or embeds): one of each, or the test fails.
    static func layout(in file: String) throws -> (owner: String, group: String, mode: Int) {
        var text = try text(file)
        for script in Set(text.matches(of: /scripts\/[a-z-]+\.sh/).map { String($0.0) }) where script != file {
            text += try Self.text(script)
        }
        let owners = Set(text.matches(of: /chown ([a-z_-]+):([a-z_-]+) (?:"\$config"|\/etc\/bleadvd\/bleadvd\.toml|\$\(CONFDIR\)\/bleadvd\.toml)/).map { "\($0.1):\($0.2)" })
        let modes = Set(text.matches(of: /chmod (0?[0-7]{3}) (?:"\$config"|\/etc\/bleadvd\/bleadvd\.toml|\$\(CONFDIR\)\/bleadvd\.toml)/).map { String($0.1) })
        guard owners.count == 1, modes.count == 1, let owner = owners.first, let mode = Int(modes.first!, radix: 8) else {
            throw TestFailure("\(file) sets the config's owner \(owners.sorted()) and mode \(modes.sorted()), not one of each")
        }
        let parts = owner.split(separator: ":").map(String.init)
        return (parts[0], parts[1], mode)
    }

    static func id(_ name: String, in table: [String: Int]) throws -> Int {
        guard let id = table[name] else { throw TestFailure("no stand-in id for \(name): add it to ConfigAccessTests") }
        return id
    }

    /// `cat PATH` (or `ls` for a folder) by uid `uid`, primary group `gid`, supplementary `groups`.
    static func reads(_ path: String, uid: Int, gid: Int, groups: [Int]) async throws -> Bool {
        var isFolder: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
        let credentials = ["--reuid=\(uid)", "--regid=\(gid)"]
            + (groups.isEmpty ? ["--clear-groups"] : ["--groups=\(groups.map(String.init).joined(separator: ","))"])
        let result = try await runProgram("/usr/bin/setpriv", credentials + (isFolder.boolValue ? ["/bin/ls", path] : ["/bin/cat", path]))
        return result.status == 0
    }

    /// The daemon as the unit runs it: `User=`, `Group=`, `SupplementaryGroups=`.
    static func daemonReads(_ path: String) async throws -> Bool {
        let user = try #require(try unit("User").first), group = try #require(try unit("Group").first)
        return try await reads(path, uid: try id(user, in: uids), gid: try id(group, in: gids),
                               groups: try unit("SupplementaryGroups").map { try id($0, in: gids) })
    }

    /// A folder others may enter, holding the config laid out as `file` says.
    static func installedConfig(as file: String) throws -> (folder: URL, config: String) {
        let layout = try layout(in: file)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bleadvd-access-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        let config = folder.appendingPathComponent("bleadvd.toml").path
        try "encryption_key = \"231d39c1d7cc1ab1aee224cd096db932\"\n".write(toFile: config, atomically: false, encoding: .utf8)
        guard chown(config, uid_t(try id(layout.owner, in: uids)), gid_t(try id(layout.group, in: gids))) == 0,
              chmod(config, mode_t(layout.mode)) == 0 else { throw TestFailure("cannot lay out \(config): errno \(errno)") }
        return (folder, config)
    }

    @Test("a member of the group that may control bleadvd cannot read the config bleadvd's package or make install lays out, and the daemon can",
          arguments: ["scripts/make-deb.sh", "Makefile"])
    func controlGroupReadsNoKeys(file: String) async throws {
        let (folder, config) = try Self.installedConfig(as: file)
        defer { try? FileManager.default.removeItem(at: folder) }
        let controlGroups = try Self.controlGroups()
        try #require(!controlGroups.isEmpty, "the bus policy names no control group")

        let daemon = try await Self.daemonReads(config)
        var members: [String: Bool] = [:]
        for group in controlGroups {
            // Added with usermod -aG: the group is one of the member's supplementary groups.
            members[group] = try await Self.reads(config, uid: Self.member, gid: 65_534, groups: [try Self.id(group, in: Self.gids)])
        }

        #expect(daemon, "bleadvd (as its unit runs it) cannot read the config \(file) lays out")
        #expect(members.values.allSatisfy { !$0 }, "a control group's member reads the config's keys: \(members)")
    }

    @Test("a member of the group that may control bleadvd cannot list or read its state directory, and the daemon can")
    func controlGroupReadsNoState() async throws {
        let mode = try #require(try Self.unit("StateDirectoryMode").first.flatMap { Int($0, radix: 8) })
        let user = try #require(try Self.unit("User").first), group = try #require(try Self.unit("Group").first)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bleadvd-state-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: folder) }
        guard chown(folder.path, uid_t(try Self.id(user, in: Self.uids)), gid_t(try Self.id(group, in: Self.gids))) == 0,
              chmod(folder.path, mode_t(mode)) == 0 else { throw TestFailure("cannot lay out \(folder.path): errno \(errno)") }

        let daemon = try await Self.daemonReads(folder.path)
        var members: [String: Bool] = [:]
        for control in try Self.controlGroups() {
            members[control] = try await Self.reads(folder.path, uid: Self.member, gid: 65_534, groups: [try Self.id(control, in: Self.gids)])
        }

        #expect(daemon)
        #expect(members.values.allSatisfy { !$0 }, "a control group's member lists the state directory: \(members)")
    }
}
