public import Peripheral

/// A characteristic's `read` program and its terms: what answers a central's read of it, run
/// when asked (`read = "/usr/local/bin/cpu-temp"`), its output read in the characteristic's
/// format.
public struct ReadProgram: Hashable, Sendable {
    /// The program and its arguments, all from the file: nothing from the radio.
    public var command: [String]
    /// How long an answer serves later reads (`max_age`): reads within it run nothing.
    public var maxAge: Duration
    /// How long a run may take (`read_timeout`): past it the program is killed and the central
    /// gets an error.
    public var timeout: Duration
    /// How often the value is read again while a central is subscribed (`notify_every`); nil:
    /// only when a central reads.
    public var notifyEvery: Duration?

    /// The keys a characteristic's table takes for it.
    static let keys: Set<String> = ["read", "max_age", "read_timeout", "notify_every"]
    /// `max_age`'s default and what it may be, in seconds.
    public static let defaultMaxAge: Duration = .seconds(1)
    static let maxAgeRange: ClosedRange<Double> = 0.1...86_400
    /// `read_timeout`'s default and what it may be, in seconds: well inside the 25 s bluetoothd
    /// waits for a `ReadValue` answer and ATT's 30 s.
    public static let defaultTimeout: Duration = .seconds(5)
    static let timeoutRange: ClosedRange<Double> = 0.1...20
    /// What `notify_every` may be, in seconds.
    static let notifyRange: ClosedRange<Double> = 1...86_400
    /// The most arguments a command takes, and bytes one takes.
    static let maximumArguments = 16
    static let maximumArgumentLength = 1024

    /// A program with its terms.
    public init(command: [String], maxAge: Duration = defaultMaxAge, timeout: Duration = defaultTimeout, notifyEvery: Duration? = nil) {
        self.command = command
        self.maxAge = maxAge
        self.timeout = timeout
        self.notifyEvery = notifyEvery
    }
}

extension Reader {
    /// A characteristic's `read` program and its terms, checked against what the
    /// characteristic is (`flags`); nil when the table names none.
    func readProgram(_ fields: [String: TOMLNode], flags: Set<GATTFlag>, _ path: [String]) throws(ConfigError) -> ReadProgram? {
        guard let node = fields["read"] else {
            if let key = ["max_age", "read_timeout", "notify_every"].first(where: { fields[$0] != nil }) {
                throw error(path + [key], "is for a characteristic read from a program; give read = \"/path/to/program\" too")
            }
            return nil
        }
        let command = node.string != nil ? [try string(node, path + ["read"])] : try strings(node, path + ["read"])
        guard let program = command.first, program.hasPrefix("/") else {
            throw error(path + ["read"], "must be an absolute path to a program, or a command as an array starting with one (e.g. [\"/usr/local/bin/sensor\", \"cpu\"])")
        }
        guard command.count <= ReadProgram.maximumArguments,
              command.allSatisfy({ !$0.utf8.contains(0) && $0.utf8.count <= ReadProgram.maximumArgumentLength }) else {
            throw error(path + ["read"], "takes at most \(ReadProgram.maximumArguments) arguments of at most \(ReadProgram.maximumArgumentLength) bytes, without NUL")
        }
        if let write = flags.filter(\.isWrite).min() {
            throw error(path + ["flags"], "has \(write.rawValue), but the value is read from a program: a central's write would be lost at the next read; drop the write flags or read")
        }
        guard !flags.isDisjoint(with: [.read, .notify, .indicate]) else {
            throw error(path + ["flags"], "has no read, notify or indicate: no central could learn what the program says")
        }
        var read = ReadProgram(command: command)
        if let node = fields["max_age"] { read.maxAge = try seconds(node, path + ["max_age"], ReadProgram.maxAgeRange) }
        if let node = fields["read_timeout"] { read.timeout = try seconds(node, path + ["read_timeout"], ReadProgram.timeoutRange) }
        if let node = fields["notify_every"] {
            guard !flags.isDisjoint(with: [.notify, .indicate]) else {
                throw error(path + ["notify_every"], "needs notify or indicate in flags: only subscribed centrals are sent the values it reads")
            }
            read.notifyEvery = try seconds(node, path + ["notify_every"], ReadProgram.notifyRange)
        }
        return read
    }

    /// A time in seconds (an integer or a decimal, `0.5`), within `range`.
    func seconds(_ node: TOMLNode, _ path: [String], _ range: ClosedRange<Double>) throws(ConfigError) -> Duration {
        guard let number = node.finiteNumber else {
            throw error(path, "must be a number of seconds, not \(node.type)")
        }
        guard range.contains(number) else {
            throw error(path, "is \(GATTFormat.shown(number)) s; it must be between \(GATTFormat.shown(range.lowerBound)) and \(GATTFormat.shown(range.upperBound))")
        }
        return .milliseconds(Int64((number * 1000).rounded()))
    }
}

extension ReadProgram {
    /// The value a program's `output` gives in `format`: text for `utf8` (without the line end
    /// a program prints last), a number for the numeric formats, hex digits for `hex`, each
    /// checked as a value set is.
    /// - Throws: `GATTReadError` saying what the output is not, never what it is (a program's
    ///   output is the central's, not the journal's).
    public static func value(of output: [UInt8], format: GATTFormat) throws(GATTReadError) -> (GATTValue, [UInt8]) {
        let what = "its output (\(output.count) byte\(output.count == 1 ? "" : "s"), not shown)"
        guard let text = String(validating: output, as: UTF8.self) else { throw GATTReadError("\(what) is not UTF-8 text") }
        let trimmed = format.kind == .utf8
            ? String(text.reversed().drop { $0 == "\n" || $0 == "\r\n" }.reversed())
            : text.trimmingWhitespace
        do {
            let value = try ConfiguredService.value(.string(trimmed), format: format)
            return (value, try format.encode(value))
        } catch {
            throw GATTReadError("\(what) is not \(expected(format))")
        }
    }

    /// What a value of `format` is, for a message: `a number for sint16 (exponent -2, -273.15 to 327.67)`.
    static func expected(_ format: GATTFormat) -> String {
        var terms: [String] = []
        if format.exponent != 0 { terms.append("exponent \(format.exponent)") }
        if let range = format.range { terms.append("\(GATTFormat.shown(range.lowerBound)) to \(GATTFormat.shown(range.upperBound))") }
        if !format.isNumeric { terms.append("at most \(format.maximumLength) bytes") }
        let kind = switch format.kind {
        case .utf8: "UTF-8 text"
        case .hex: "hex digits"
        default: "a number"
        }
        return "\(kind) for \(format.kind.rawValue)" + (terms.isEmpty ? "" : " (\(terms.joined(separator: ", ")))")
    }
}

extension String {
    /// Without the white space at either end.
    var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
