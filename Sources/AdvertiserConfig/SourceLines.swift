/// Finds the line a key is written on. The TOML parser keeps no positions for values, so an
/// error about a well-formed but wrong value finds its line here, by reading the text the way
/// TOML is laid out: `[table]` headers, `key = value` lines, inline tables on one line.
struct SourceLines {
    /// For each line (1-based): the table it is in and the key it assigns, if any.
    private var keyLines: [(table: [String], key: [String], line: Int)] = []
    private var headers: [(table: [String], line: Int)] = []

    init(_ text: String) {
        var table: [String] = []
        // Any line break: "\r\n" is one Character in Swift, so splitting on "\n" alone misses it.
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.drop { $0 == "\u{FEFF}" }.trimmingLeadingSpaces()
            if line.hasPrefix("[") {
                let inner = line.drop { $0 == "[" }.prefix { $0 != "]" }
                table = Self.dottedKey(Substring(inner))
                headers.append((table, index + 1))
            } else if let equals = line.firstIndex(of: "="), !line.hasPrefix("#") {
                keyLines.append((table, Self.dottedKey(line[..<equals]), index + 1))
            }
        }
    }

    /// The line of `path` (table keys then the key), or of the nearest enclosing table.
    func line(of path: [String]) -> Int? {
        for length in stride(from: path.count, through: 1, by: -1) {
            let prefix = Array(path.prefix(length))
            if let found = keyLines.first(where: { $0.table + $0.key == prefix }) { return found.line }
            if let found = headers.first(where: { $0.table == prefix }) { return found.line }
        }
        return nil
    }

    private static func dottedKey(_ text: Substring) -> [String] {
        text.split(separator: ".").map {
            String($0.trimmingLeadingSpaces().reversed().drop { $0 == " " || $0 == "\t" }.reversed())
                .trimmingCharacters(quotes: "\"'")
        }
    }
}

extension StringProtocol {
    fileprivate func trimmingLeadingSpaces() -> SubSequence {
        drop { $0 == " " || $0 == "\t" }
    }
}

extension String {
    fileprivate func trimmingCharacters(quotes: String) -> String {
        guard let first = first, let last = last, count >= 2, quotes.contains(first), first == last else { return self }
        return String(dropFirst().dropLast())
    }
}
