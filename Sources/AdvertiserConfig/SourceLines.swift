/// Finds the line a key is written on. The TOML parser keeps no positions for values, so an
/// error about a well-formed but wrong value finds its line here, by reading the text the way
/// TOML is laid out: `[table]` headers, `key = value` lines, inline tables on one line, keys
/// quoted or dotted, and multi-line strings, whose lines are text, not keys. Lines are counted
/// as TOML (and its parser) counts them: at each line feed, not at other Unicode line breaks.
struct SourceLines {
    private var keyLines: [(table: [String], key: [String], line: Int)] = []
    private var headers: [(table: [String], line: Int)] = []

    init(_ text: String) {
        var table: [String] = []
        var open: Delimiter?
        for (index, bytes) in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let line = Array(String(decoding: bytes, as: UTF8.self).unicodeScalars)
            var position = 0
            if open == nil {
                while position < line.count, [" ", "\t", "\u{FEFF}"].contains(line[position]) { position += 1 }
                if position < line.count, line[position] == "[" {
                    while position < line.count, line[position] == "[" { position += 1 }
                    let (key, end) = Self.dottedKey(line, from: position, until: "]")
                    table = key
                    headers.append((table, index + 1))
                    position = end
                } else if position < line.count, line[position] != "#" {
                    let (key, end) = Self.dottedKey(line, from: position, until: "=")
                    if end < line.count { keyLines.append((table, key, index + 1)) }
                    position = end
                }
            }
            open = Self.skipStrings(line, from: position, open: open)
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

    /// The quotes of a multi-line string.
    private enum Delimiter: String {
        case basic = "\"\"\""
        case literal = "'''"
    }

    /// A dotted key starting at `start` up to `stop` outside quotes: its parts, unquoted and
    /// trimmed, and where `stop` is (the line's end when there is none).
    private static func dottedKey(_ line: [Unicode.Scalar], from start: Int, until stop: Unicode.Scalar) -> ([String], Int) {
        var parts: [String] = []
        var part = ""
        var quote: Unicode.Scalar?
        var position = start
        while position < line.count {
            let scalar = line[position]
            if let open = quote {
                if scalar == "\\" && open == "\"" && position + 1 < line.count {
                    part.unicodeScalars.append(line[position + 1])
                    position += 1
                } else if scalar == open {
                    quote = nil
                } else {
                    part.unicodeScalars.append(scalar)
                }
            } else if scalar == "\"" || scalar == "'" {
                quote = scalar
            } else if scalar == stop {
                break
            } else if scalar == "." {
                parts.append(part)
                part = ""
            } else if scalar != " " && scalar != "\t" {
                part.unicodeScalars.append(scalar)
            }
            position += 1
        }
        parts.append(part)
        return (parts, position)
    }

    /// Reads the rest of `line` from `start`, inside the multi-line string `open` if one is
    /// open, past strings and up to a comment: the multi-line string still open at its end.
    private static func skipStrings(_ line: [Unicode.Scalar], from start: Int, open: Delimiter?) -> Delimiter? {
        var open = open
        var single: Unicode.Scalar?
        var position = start
        func at(_ delimiter: Delimiter) -> Bool {
            let quotes = Array(delimiter.rawValue.unicodeScalars)
            return position + 3 <= line.count && Array(line[position..<position + 3]) == quotes
        }
        while position < line.count {
            let scalar = line[position]
            if let delimiter = open {
                if scalar == "\\" && delimiter == .basic {
                    position += 2
                    continue
                }
                if at(delimiter) {
                    open = nil
                    position += 3
                    // Up to two more quotes belong to the string's text ("""a"""").
                    while position < line.count, line[position] == delimiter.rawValue.unicodeScalars.first! { position += 1 }
                    continue
                }
            } else if let quote = single {
                if scalar == "\\" && quote == "\"" {
                    position += 2
                    continue
                }
                if scalar == quote { single = nil }
            } else if at(.basic) || at(.literal) {
                open = at(.basic) ? .basic : .literal
                position += 3
                continue
            } else if scalar == "\"" || scalar == "'" {
                single = scalar
            } else if scalar == "#" {
                break
            }
            position += 1
        }
        return open
    }
}
