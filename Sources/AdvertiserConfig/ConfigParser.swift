#if canImport(Glibc)
import Glibc
#endif
import Peripheral
import TOMLKit

/// Reads the config file: TOML in, a ``DaemonConfig`` of validated advertisements out. Every
/// problem is a ``ConfigError`` naming the file, the line and the key; unknown keys are errors.
public enum ConfigParser {
    /// The largest config file read: far more than any real one, small enough that a wrong
    /// path (a log, a disk image) is refused rather than read.
    public static let maximumFileSize = 1 << 20
    /// The most advertisements one file may define.
    public static let maximumAdvertisements = 1000

    /// Reads and parses the file at `path`, in this process: toml++ aborts on some malformed
    /// files, so a program that must survive any file loads it through ``ConfigCheck`` instead.
    public static func load(path: String) throws(ConfigError) -> DaemonConfig {
        try parse(try contents(of: path), file: path)
    }

    /// The text of the file at `path`, or why it cannot be a config file: missing, a directory
    /// or another kind of file, unreadable, too big, a NUL byte, not UTF-8 (with the line).
    static func contents(of path: String) throws(ConfigError) -> String {
        func failure(_ message: String, line: Int? = nil) -> ConfigError {
            ConfigError(file: path, line: line, key: "", message: message)
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw failure(errno == ENOENT ? "the config file does not exist" : "the config file cannot be read: \(String(cString: strerror(errno)))")
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw failure("is a directory, not a config file")
        default: throw failure("is not a regular file (a FIFO, a device or a socket); give a config file")
        }
        guard info.st_size <= maximumFileSize else {
            throw failure("is \(info.st_size) bytes; a config file is at most \(maximumFileSize) bytes")
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("the config file cannot be read: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count <= maximumFileSize {
            let count = read(descriptor, &buffer, buffer.count)
            guard count >= 0 else { throw failure("the config file cannot be read: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        guard bytes.count <= maximumFileSize else {
            throw failure("grew past \(maximumFileSize) bytes while it was read; a config file is at most that")
        }
        return try text(bytes, file: path)
    }

    /// `bytes` as UTF-8 text.
    static func text(_ bytes: [UInt8], file: String) throws(ConfigError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            var offset = 0
            var iterator = bytes.makeIterator()
            var decoder = UTF8()
            decoding: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar): offset += UTF8.width(scalar)
                case .emptyInput, .error: break decoding
                }
            }
            throw ConfigError(file: file, line: line(at: offset, in: bytes), key: "", message: "is not UTF-8 text (byte \(offset + 1) is not)")
        }
        return text
    }

    /// The line (1-based) that byte `offset` of `bytes` is on.
    static func line(at offset: Int, in bytes: [UInt8]) -> Int {
        bytes[..<offset].reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    }

    /// Parses config text; `file` names it in errors.
    public static func parse(_ text: String, file: String) throws(ConfigError) -> DaemonConfig {
        // TOMLKit reads a C string: it would stop at a NUL and ignore the rest unseen.
        if let nul = text.utf8.firstIndex(of: 0) {
            let line = line(at: text.utf8.distance(from: text.utf8.startIndex, to: nul), in: Array(text.utf8))
            throw ConfigError(file: file, line: line, key: "", message: "contains a NUL byte; a config file is text")
        }
        let root: [String: TOMLNode]
        do {
            root = TOMLNode(try TOMLTable(string: text)).table ?? [:]
        } catch let error as TOMLParseError {
            throw ConfigError(file: file, line: error.source.begin.line, key: "", message: Self.shown(error, in: text))
        } catch {
            throw ConfigError(file: file, line: nil, key: "", message: "not valid TOML: \(error)")
        }
        let reader = Reader(file: file, lines: SourceLines(text))
        return try reader.config(root)
    }
}

extension ConfigParser {
    /// What a syntax error says, unless the line it is on holds a secret: the TOML library
    /// quotes the text it could not read, and an unquoted key would be that text.
    static func shown(_ error: TOMLParseError, in text: String) -> String {
        let line = error.source.begin.line
        let source = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .dropFirst(max(0, line - 1)).first.map { String(decoding: $0, as: UTF8.self) } ?? ""
        let secret = ConfiguredAdvertisement.secretKeys.compactMap { $0.split(separator: ".").last }.first { source.contains($0) }
        guard let secret else { return error.description }
        return "\(secret) is not valid TOML here (what was read is not shown: it is a secret); "
            + "write it as a quoted string of 32 hex digits, e.g. \(secret) = \"00112233445566778899aabbccddeeff\""
    }

    /// The advertisement `name` with `changes` applied (`bleadvctl set`), checked exactly as
    /// the config file is. Keys are those of ``ConfiguredAdvertisement/settings``; for a preset,
    /// its own keys are given without the preset's name (`major`, `temperature`).
    /// - Throws: ``ConfigError`` (with no file or line) naming the key: unknown, the wrong
    ///   type, out of range, or an advertisement that no longer fits, with the byte counts.
    public static func applying(
        _ changes: [String: ConfigValue], to configured: ConfiguredAdvertisement, name: String
    ) throws(ConfigError) -> ConfiguredAdvertisement {
        let path = ["advertisement", name]
        var settings = configured.settings
        var named: [String: String] = [:]
        for (key, value) in changes.sorted(by: { $0.key < $1.key }) {
            let setting = configured.settingKey(key)
            if let other = named.updateValue(key, forKey: setting) {
                throw ConfigError(file: "", line: nil, key: (path + [setting]).joined(separator: "."),
                                  message: "is given twice (as \(Untrusted.quoted(other)) and \(Untrusted.quoted(key))); give each key once")
            }
            // A table's entries are set one by one: a value for the whole table would be
            // dropped when the table is rebuilt from its entries.
            if let entry = settings.keys.sorted().first(where: { $0.hasPrefix(setting + ".") }) {
                throw ConfigError(file: "", line: nil, key: (path + [setting]).joined(separator: "."),
                                  message: "is a table; set one of its entries, e.g. \(entry)")
            }
            guard key != "enabled" else {
                throw ConfigError(file: "", line: nil, key: (path + [key]).joined(separator: "."),
                                  message: "is not a value; turn advertisements on and off with bleadvctl on and off")
            }
            // A sensor's buttons and dimmers are what it is, not values: an event on air or
            // waiting has the shape they gave it; a TLM frame's update period is its timer's.
            let declarations: Set<String> = ["services", "priority", "bthome.buttons", "bthome.dimmers", "bthome.event_seconds", "eddystone_tlm.update_seconds"]
            guard !ConfiguredAdvertisement.secretKeys.contains(setting) && !declarations.contains(setting) else {
                throw ConfigError(file: "", line: nil, key: (path + [key]).joined(separator: "."),
                                  message: "cannot be set at run time; change it in the config file and reload")
            }
            settings[setting] = value
        }
        var table = ConfiguredAdvertisement.table(of: settings)
        table["enabled"] = .bool(configured.enabled)
        let reader = Reader(file: "", lines: SourceLines(""), services: configured.services)
        return try reader.advertisement(table, path)
    }
}
