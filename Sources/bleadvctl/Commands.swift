import AdvertiserConfig
import AdvertiserControl
import ArgumentParser
import DBus
import Events
import Peripheral
#if canImport(Glibc)
import Glibc
#endif
import Support

/// How long a command waits for the bus and bleadvd.
struct BusOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Give up after this many seconds without an answer (exit 1).", valueName: "seconds"))
    var timeout: UInt32 = BusOptions.defaultTimeout

    static let defaultTimeout: UInt32 = 30
}

/// Names on the command line.
struct Names: ParsableArguments {
    @Argument(help: ArgumentHelp("Advertisement names (default: all configured).", valueName: "name"))
    var names: [String] = []
}

extension Bleadvctl {
    struct On: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put advertisements on air.",
            discussion: "Returns once BlueZ has registered them, or fails with BlueZ's reason. bleadvd keeps trying transient failures; see status. Without names, all but Improv's while bleadvd withholds it (the Wi-Fi is connected, or the box was provisioned); naming improv then is refused (exit 2).")
        @OptionGroup var bus: BusOptions
        @OptionGroup var names: Names

        func run() throws {
            try PlainCommand.on(names: names.names, timeout: bus.timeout).run()
        }
    }

    struct Off: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Take advertisements off air.")
        @OptionGroup var bus: BusOptions
        @OptionGroup var names: Names

        func run() throws {
            try PlainCommand.off(names: names.names, timeout: bus.timeout).run()
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the state of each advertisement and GATT service.",
            discussion: "Kinds: advertisement, service (a GATT service: its state is the services' registration). States: on (on air, or registered), off, retrying (a transient failure; bleadvd tries again), waiting (for bluetoothd or an adapter), paused (a central's link took it off air and the controller refused it beside the link; back when the link ends), failed (refused until changed), rotating (taking turns with others through fewer slots than advertisements: on air part of the time, as DETAIL says). A service whose notifications a connected central's MTU cuts says so: (label's notifications reach AA:BB:CC:DD:EE:FF cut to 20 bytes).")
        @OptionGroup var bus: BusOptions
        @Flag(help: "Print JSON: {name: {kind, desired, state, since_seconds, id?, error?, error_code?, retry_in_seconds?, ignored?, mismatch?, values, cut?}}; cut: [{characteristic, central, bytes}], a service's notifications that a connected central's MTU cuts.")
        var json = false

        func run() throws {
            try PlainCommand.status(json: json, timeout: bus.timeout).run()
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the configured names, advertisements and GATT services, one per line.")
        @OptionGroup var bus: BusOptions

        func run() throws {
            try PlainCommand.list(timeout: bus.timeout).run()
        }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change an advertisement's or a GATT service's values on air, in place.",
            discussion: """
                KEY is a key of the advertisement's table in the config file: a BTHome \
                measurement (temperature=21.5, door=true), a beacon field (major=7), or a raw \
                field (local_name=Kitchen, manufacturer_data.0xFFFF=0102, service_data.180F=64, \
                data.0x26=01); for a GATT service, a characteristic (level=75), checked against \
                its format, and centrals that subscribed are notified. Numbers are written as in TOML (21.5, -12, 1e3, 0x10); each key \
                is given once, and a table is changed one entry at a time. Values are checked as \
                the config file is; one that does not fit is refused (exit 2) and the old bytes \
                stay on air. The advertisement is changed \
                in place, not re-registered; changes faster than every 100 ms are coalesced, \
                the newest wins. Values set here last until the advertisement's table in the \
                file changes (and is reloaded) or bleadvd restarts.

                Example, from a systemd timer or cron every minute:
                  bleadvctl set kitchen temperature=$(read-sensor) battery=87

                With --central ADDRESS, one characteristic of a GATT service that notifies \
                (one KEY=VALUE) is notified to that subscribed central alone, at once and not \
                coalesced, and its value stays as it was (reads and status give that). This needs BlueZ 5.71 \
                or later, which gives each central a notification socket, and characteristics \
                that do not indicate; elsewhere it is refused (exit 1); a central that is not \
                subscribed is refused with exit 2 (bleadvctl centrals lists what each \
                subscribed to).
                  bleadvctl set meter level=80 --central AA:BB:CC:DD:EE:FF

                With --stdin, KEY=VALUE lines are read from standard input as well (one a \
                line, empty lines skipped, at most 64 KiB): a value there is on no command line, \
                where ps and the shell's history would show it. A line that is not KEY=VALUE is \
                refused by its number, never shown.
                  bleadvctl set lamp --stdin < /run/secrets/lamp-pin
                """)
        @OptionGroup var bus: BusOptions
        @Argument(help: ArgumentHelp("The advertisement or GATT service.", valueName: "name"))
        var name: String
        @Argument(help: ArgumentHelp("What to change.", valueName: "key=value"))
        var values: [String] = []
        @Flag(help: "Read KEY=VALUE lines from standard input too: for values that should be on no command line.")
        var stdin = false
        @Option(help: ArgumentHelp("Notify this subscribed central alone; the values stay.", valueName: "address"))
        var central: String?

        /// The most of standard input read.
        static let inputLimit = 65_536

        func validate() throws {
            for pair in values where !Self.isPair(pair) {
                throw ValidationError("\(Untrusted.quoted(pair)) is not KEY=VALUE")
            }
            if values.isEmpty && !stdin { throw ValidationError("nothing to set; give KEY=VALUE, e.g. temperature=21.5, or --stdin") }
            try Self.changes(values)
            if let central, !Bond.isAddress(central) {
                throw ValidationError("\(Untrusted.quoted(central)) is no central's address; give one as AA:BB:CC:DD:EE:FF")
            }
        }

        func run() throws {
            let pairs = values + (stdin ? try Self.standardInputPairs() : [])
            guard let central else {
                try PlainCommand.set(name: name, values: pairs, timeout: bus.timeout).run()
                return
            }
            let changes = try Self.changes(pairs)
            guard !changes.isEmpty else { throw Failure(code: Failure.usage, message: "nothing to notify: standard input had no KEY=VALUE line") }
            try withDaemon(bus) { try $0.notify(name, central: central, changes) }
        }

        static func isPair(_ pair: some StringProtocol) -> Bool {
            pair.contains("=") && !pair.hasPrefix("=")
        }

        /// The changes `pairs` ask for.
        /// - Throws: a key given twice.
        @discardableResult
        static func changes(_ pairs: [String]) throws -> [String: String] {
            var changes: [String: String] = [:]
            for pair in pairs {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let key = String(parts[0])
                guard changes.updateValue(String(parts[1]), forKey: key) == nil else {
                    throw ValidationError("\(Untrusted.quoted(key)) is given twice; give each key once")
                }
            }
            return changes
        }

        /// Standard input's KEY=VALUE lines, empty ones skipped.
        /// - Throws: more than ``inputLimit`` bytes, or a line that is not KEY=VALUE (by its
        ///   number: it may hold a secret).
        static func standardInputPairs() throws -> [String] {
            var input = Spawn.standardInput(upTo: inputLimit)
            defer { input.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
            guard input.count <= inputLimit else {
                throw Failure(code: Failure.usage, message: "more than \(inputLimit / 1024) KiB on standard input")
            }
            var pairs: [String] = []
            for (number, line) in input.split(separator: 10, omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
                let text = String(decoding: line, as: UTF8.self)
                guard isPair(text) else { throw Failure(code: Failure.usage, message: "standard input, line \(number + 1) is not KEY=VALUE") }
                pairs.append(text)
            }
            return pairs
        }
    }

    struct Reload: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make bleadvd re-read its config file.",
            discussion: "A bad config is refused with its error (exit 2) and nothing on air changes.")
        @OptionGroup var bus: BusOptions

        func run() throws {
            try PlainCommand.reload(timeout: bus.timeout).run()
        }
    }

    struct Preview: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the bytes an advertisement puts on air, offline.",
            discussion: "Reads the config file (no daemon needed) and prints each AD structure, the advertising data and scan response in hex, and the bytes used of 31.")
        @Option(name: .shortAndLong, help: ArgumentHelp("The config file.", valueName: "path"))
        var config: String = DaemonConfig.defaultPath
        @OptionGroup var names: Names

        func run() throws {
            let settings: DaemonConfig
            if ConfigCheck.isChild { throw ExitCode(ConfigCheck.childMain(file: config)) }
            do throws(ConfigError) {
                // The TOML library aborts on some malformed files: parsed in a child first.
                settings = try ConfigCheck.load(path: config, arguments: ["bleadvctl", "preview", "--config", config])
            } catch {
                throw Failure(code: Failure.usage, message: error.description)
            }
            let selected = names.names.isEmpty ? settings.names : names.names
            for name in selected where settings.advertisements[name] == nil {
                throw Failure(code: Failure.usage, message: "no advertisement named \"\(name)\" in \(config)")
            }
            // Escaped line by line: names and values come from the file.
            let text = selected.map { PreviewFormat.text(name: $0, settings.advertisements[$0]!) }.joined(separator: "\n")
            try emit(text.split(separator: "\n", omittingEmptySubsequences: false).map { Untrusted.escaped($0) }.joined(separator: "\n"))
        }
    }
}

/// Runs `body` on an event loop of its own (the commands that follow signals: watch, pair) and
/// exits: with `success` when it returns, a ``Failure``'s status, or 1.
func runOnEventLoop(exitingWith success: Int32, _ body: @escaping @Sendable (EventLoop) async throws -> Void) throws -> Never {
    reserveStandardDescriptors()
    let loop: EventLoop
    do {
        loop = try EventLoop()
    } catch {
        throw Failure(code: Failure.failed, message: "\(error)")
    }
    Task(executorPreference: loop) {
        do {
            try await body(loop)
            Glibc.exit(success)
        } catch {
            exit(after: error)
        }
    }
    loop.run()
    Glibc.exit(Failure.failed)
}

/// A connection to the system bus on `loop`; ``Failure`` (exit 3) when there is none.
func connectToSystemBus(on loop: EventLoop) async throws -> DBusConnection {
    do {
        return try await DBusConnection.connect(to: .system, on: loop)
    } catch {
        throw Failure(code: Failure.notRunning, message: "cannot reach the system bus, so bleadvd is not running there (\(error))")
    }
}

/// Connects to the system bus, runs `body` against the daemon, and turns every failure into
/// a ``Failure`` with the documented exit status.
func withDaemon<T>(_ options: BusOptions, _ body: (AdvertiserClient) throws -> T) throws -> T {
    try withDaemon(timeout: options.timeout, body)
}

/// `answer`, once it said on stderr since when BlueZ has not answered bleadvd, when a call to
/// it has waited half a second or more (or timed out, none answered since): what the command
/// prints is then what bleadvd knew (`status`, `list`, `centrals` and `bonds` answer all the
/// same). A bleadvd without `Stack` says nothing.
func saidWhetherBlueZAnswers<T>(_ answer: T, by client: AdvertiserClient) -> T {
    if let call = try? client.unanswered() { printError(call.said) }
    return answer
}

/// The same, giving up after `timeout` seconds.
func withDaemon<T>(timeout: UInt32, _ body: (AdvertiserClient) throws -> T) throws -> T {
    // One deadline for the whole command, connecting included: a bus or a bleadvd that accepts
    // the connection and never answers must not hold a script (or `systemctl reload`).
    giveUpAfter(timeout)
    defer { alarm(0) }
    let connection: DBusBlockingConnection
    do {
        connection = try DBusBlockingConnection(bus: .system)
    } catch {
        throw Failure(code: Failure.notRunning, message: "cannot reach the system bus, so bleadvd is not running there (\(error))")
    }
    do {
        return try body(AdvertiserClient(connection: connection))
    } catch let error as DBusError {
        throw Failure(dbus: error)
    }
}

extension Failure {
    /// The exit status and message for an error from the bus or the daemon.
    init(dbus error: DBusError) {
        switch error.name {
        case .serviceUnknown, .nameHasNoOwner:
            self.init(code: Self.notRunning, message: "bleadvd is not running (no \(ControlAPI.busName) on the system bus); start it with: systemctl start bleadvd")
        case .accessDenied:
            // One line of our own: the bus's text names the caller's command line and the rule.
            self.init(code: Self.failed, message: "permission denied by bleadvd's bus policy: root may do everything, members of group bleadvd on, off, set and reload, event, watch's secured values and centrals, everyone status")
        case .noReply:
            self.init(code: Self.failed, message: "bleadvd did not answer in time: \(error.message)")
        case ControlAPI.configError:
            self.init(code: Self.usage, message: error.message)
        case ControlAPI.errorName(.unknownName), ControlAPI.errorName(.invalidValue), ControlAPI.errorName(.invalid):
            self.init(code: Self.usage, message: error.message)
        default:
            self.init(code: Self.failed, message: error.message)
        }
    }
}

/// Arms SIGALRM to end the command after `seconds`, saying so (exit 1).
func giveUpAfter(_ seconds: UInt32) {
    timeoutSeconds = seconds
    signal(SIGALRM, timedOut)
    alarm(seconds)
}

nonisolated(unsafe) private var timeoutSeconds: UInt32 = 0

/// SIGALRM's handler: async-signal-safe (write and _exit only).
private func timedOut(_: Int32) {
    var line = Array("bleadvctl: no answer from the system bus or bleadvd within \(timeoutSeconds) s; giving up (see --timeout)\n".utf8)
    _ = line.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    _exit(1)
}
