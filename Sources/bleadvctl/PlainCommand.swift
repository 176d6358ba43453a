import AdvertiserControl
import ArgumentParser
import Peripheral

/// The bus verbs that scripts and units call most (`on`, `off`, `status`, `list`, `reload`,
/// `set`) when their arguments are plain: names, KEY=VALUE pairs, `--json` and `--timeout
/// SECONDS`. They run without ArgumentParser, whose start (reading every command's
/// properties by reflection, and the protocol lookups that takes through all the binary's
/// conformance tables) cost a command more than its bus call (docs/BENCHMARKS.md, #82).
///
/// This recognizes; it does not parse a second way. Everything else (a word that starts with
/// `-`, `--help`, `--stdin`, a usage error, any other command) is ArgumentParser's, which
/// prints its help and its errors as before. `PlainCommandTests` holds each vector recognized
/// here to ArgumentParser's reading of it.
enum PlainCommand: Equatable {
    case on(names: [String], timeout: UInt32)
    case off(names: [String], timeout: UInt32)
    case status(json: Bool, timeout: UInt32)
    case list(timeout: UInt32)
    case reload(timeout: UInt32)
    case set(name: String, values: [String], timeout: UInt32)

    /// The command `arguments` (after the program's name) ask for, or nil when they are not
    /// plain.
    init?(_ arguments: some Collection<String>) {
        guard let verb = arguments.first else { return nil }
        var words: [String] = []
        var timeout: UInt32?
        var json = false
        var rest = arguments.dropFirst().makeIterator()
        while let argument = rest.next() {
            switch argument {
            case "--timeout":
                guard timeout == nil, let seconds = rest.next(), let value = Self.seconds(seconds) else { return nil }
                timeout = value
            case "--json" where verb == "status" && !json:
                json = true
            default:
                guard !argument.hasPrefix("-") else { return nil }
                words.append(argument)
            }
        }
        let seconds = timeout ?? BusOptions.defaultTimeout
        switch verb {
        case "on": self = .on(names: words, timeout: seconds)
        case "off": self = .off(names: words, timeout: seconds)
        case "status" where words.isEmpty: self = .status(json: json, timeout: seconds)
        case "list" where words.isEmpty: self = .list(timeout: seconds)
        case "reload" where words.isEmpty: self = .reload(timeout: seconds)
        case "set" where words.count >= 2:
            let values = Array(words.dropFirst())
            // What Set.validate() refuses is ArgumentParser's to say.
            guard values.allSatisfy(Bleadvctl.Set.isPair), (try? Bleadvctl.Set.changes(values)) != nil else { return nil }
            self = .set(name: words[0], values: values, timeout: seconds)
        default: return nil
        }
    }

    /// Seconds written in decimal digits only, as a `UInt32`.
    private static func seconds(_ text: String) -> UInt32? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return UInt32(text)
    }

    /// Runs the command: the one body of each verb, whichever reader read its arguments.
    /// - Throws: ``Failure`` with its exit status.
    func run() throws {
        switch self {
        case .on(let names, let timeout):
            try withDaemon(timeout: timeout) { try $0.on(names) }
        case .off(let names, let timeout):
            try withDaemon(timeout: timeout) { try $0.off(names) }
        case .status(let json, let timeout):
            // A service's notifications that a connected central's MTU cuts, from Centrals (an
            // older bleadvd without it: none shown).
            let (states, centrals) = try withDaemon(timeout: timeout) { client in
                saidWhetherBlueZAnswers((try client.status(), (try? client.centrals()) ?? []), by: client)
            }
            try emit(json ? StatusFormat.json(states, centrals: centrals) : StatusFormat.table(states, centrals: centrals))
        case .list(let timeout):
            let names = try withDaemon(timeout: timeout) { saidWhetherBlueZAnswers(try $0.list(), by: $0) }
            try emit(names.map { Untrusted.escaped($0) + "\n" }.joined())
        case .reload(let timeout):
            try withDaemon(timeout: timeout) { try $0.reload() }
        case .set(let name, let values, let timeout):
            let changes: [String: String]
            do {
                changes = try Bleadvctl.Set.changes(values)
            } catch let error as ValidationError {
                throw Failure(code: Failure.usage, message: error.message)
            }
            guard !changes.isEmpty else { throw Failure(code: Failure.usage, message: "nothing to set: standard input had no KEY=VALUE line") }
            try withDaemon(timeout: timeout) { try $0.set(name, changes) }
        }
    }
}
