import ArgumentParser
@testable import BleadvctlCommands
import Testing
import TestSupport

@Suite("bleadvctl's plain bus verbs, read without ArgumentParser")
struct PlainCommandTests {
    /// ArgumentParser's reading of `arguments` as a plain command: nil when it refuses them
    /// (a usage error, --help) or reads a command or an option that is not plain.
    static func argumentParsersReading(_ arguments: [String]) -> PlainCommand? {
        guard let command = try? Bleadvctl.parseAsRoot(arguments) else { return nil }
        switch command {
        case let command as Bleadvctl.On: return .on(names: command.names.names, timeout: command.bus.timeout)
        case let command as Bleadvctl.Off: return .off(names: command.names.names, timeout: command.bus.timeout)
        case let command as Bleadvctl.Status: return .status(json: command.json, timeout: command.bus.timeout)
        case let command as Bleadvctl.List: return .list(timeout: command.bus.timeout)
        case let command as Bleadvctl.Reload: return .reload(timeout: command.bus.timeout)
        case let command as Bleadvctl.Set where !command.stdin:
            return .set(name: command.name, values: command.values, timeout: command.bus.timeout)
        default: return nil
        }
    }

    @Test("every vector of a command and up to three words that is read without ArgumentParser is read as ArgumentParser reads it")
    func agreesWithArgumentParser() async {
        let commands = ["on", "off", "status", "list", "reload", "set", "watch", "help"]
        let words = ["heart", "k=v", "k=w", "=v", "", "--json", "--timeout", "07", "4294967296", "-h", "--", "--stdin", "help"]
        var vectors = commands.map { [$0] }
        for _ in 1...3 { vectors += vectors.filter { $0.count == vectors.last!.count }.flatMap { vector in words.map { vector + [$0] } } }

        let all = vectors
        // Off the cooperative pool: a thousand of ArgumentParser's parses take seconds (30 under
        // load), which one of the pool's two threads would not give other suites' daemons.
        let (recognized, disagreements): (Int, [String]) = await offThePool {
            var recognized = 0
            var disagreements: [String] = []
            for vector in all {
                guard let plain = PlainCommand(vector) else { continue }
                recognized += 1
                let reading = Self.argumentParsersReading(vector)
                if reading != plain { disagreements.append("\(vector): \(plain), ArgumentParser: \(String(describing: reading))") }
            }
            return (recognized, disagreements)
        }

        let everyVector: Int = 8 * (1 + 13 + 169 + 2_197)
        #expect(vectors.count == everyVector)
        #expect(recognized > 1_000)
        #expect(disagreements.isEmpty, "\(disagreements)")
    }

    @Test("the forms that scripts and the unit use are read without ArgumentParser", arguments: [
        (["on"], PlainCommand.on(names: [], timeout: 30)),
        (["on", "heart", "door"], .on(names: ["heart", "door"], timeout: 30)),
        (["off", "--timeout", "5"], .off(names: [], timeout: 5)),
        (["status"], .status(json: false, timeout: 30)),
        (["status", "--json"], .status(json: true, timeout: 30)),
        (["list"], .list(timeout: 30)),
        (["reload"], .reload(timeout: 30)),
        (["set", "kitchen", "temperature=21.5", "battery=87"], .set(name: "kitchen", values: ["temperature=21.5", "battery=87"], timeout: 30)),
    ])
    func readsTheCommonForms(arguments: [String], expected: PlainCommand) {
        #expect(PlainCommand(arguments) == expected)
    }

    @Test("help, the other options and every usage error are left to ArgumentParser", arguments: [
        ["--help"], ["on", "--help"], ["on", "-h"], ["on", "--", "-h"], ["status", "heart"], ["status", "--json", "--json"],
        ["set", "kitchen"], ["set", "kitchen", "temperature"], ["set", "kitchen", "a=1", "a=2"], ["set", "kitchen", "--stdin"],
        ["on", "--timeout"], ["on", "--timeout", "-1"], ["on", "--timeout", "1", "--timeout", "2"], ["on", "--timeout=5"],
        ["preview"], ["watch"], ["help", "on"], [],
    ])
    func leavesTheRestToArgumentParser(arguments: [String]) {
        #expect(PlainCommand(arguments) == nil)
    }
}
