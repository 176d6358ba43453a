import AdvertiserConfig
import AdvertiserControl
import ArgumentParser
import DBus
import Peripheral

/// Names on the command line.
struct Names: ParsableArguments {
    @Argument(help: ArgumentHelp("Advertisement names (default: all configured).", valueName: "name"))
    var names: [String] = []
}

extension Bleadvctl {
    struct On: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put advertisements on air.",
            discussion: "Returns once BlueZ has registered them, or fails with BlueZ's reason. bleadvd keeps trying transient failures; see status.")
        @OptionGroup var names: Names

        func run() async throws {
            try await withDaemon { try await $0.on(names.names) }
        }
    }

    struct Off: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Take advertisements off air.")
        @OptionGroup var names: Names

        func run() async throws {
            try await withDaemon { try await $0.off(names.names) }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show each advertisement's state.",
            discussion: "States: on (on air), off, retrying (a transient failure; bleadvd tries again), waiting (for bluetoothd or an adapter), failed (refused until changed).")
        @Flag(help: "Print JSON: {name: {desired, state, since_seconds, id?, error?, error_code?, retry_in_seconds?}}.")
        var json = false

        func run() async throws {
            let states = try await withDaemon { try await $0.status() }
            print(json ? StatusFormat.json(states) : StatusFormat.table(states), terminator: "")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the configured advertisement names.")

        func run() async throws {
            for name in try await withDaemon({ try await $0.list() }) { print(name) }
        }
    }

    struct Reload: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make bleadvd re-read its config file.",
            discussion: "A bad config is refused with its error (exit 2) and nothing on air changes.")

        func run() async throws {
            try await withDaemon { try await $0.reload() }
        }
    }

    struct Preview: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the bytes an advertisement puts on air, offline.",
            discussion: "Reads the config file (no daemon needed) and prints each AD structure, the advertising data and scan response in hex, and the bytes used of 31.")
        @Option(name: .shortAndLong, help: ArgumentHelp("The config file.", valueName: "path"))
        var config: String = DaemonConfig.defaultPath
        @OptionGroup var names: Names

        func run() async throws {
            let settings: DaemonConfig
            do {
                settings = try ConfigParser.load(path: config)
            } catch {
                throw Failure(code: Failure.usage, message: error.description)
            }
            let selected = names.names.isEmpty ? settings.names : names.names
            for name in selected where settings.advertisements[name] == nil {
                throw Failure(code: Failure.usage, message: "no advertisement named \"\(name)\" in \(config)")
            }
            print(selected.map { PreviewFormat.text(name: $0, settings.advertisements[$0]!) }.joined(separator: "\n"), terminator: "")
        }
    }
}

/// Connects to the system bus, runs `body` against the daemon, and turns every failure into
/// a ``Failure`` with the documented exit status.
func withDaemon<T>(_ body: (AdvertiserClient) async throws -> T) async throws -> T {
    let connection: DBusConnection
    do {
        connection = try await DBusConnection.connect(to: .system)
    } catch {
        throw Failure(code: Failure.notRunning, message: "cannot reach the system bus, so bleadvd is not running there (\(error))")
    }
    defer { Task { await connection.close() } }
    do {
        return try await body(AdvertiserClient(connection: connection))
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
            self.init(code: Self.failed, message: "permission denied: only root and members of group bleadvd may change advertising (\(error.message))")
        case .noReply:
            self.init(code: Self.failed, message: "bleadvd did not answer in time: \(error.message)")
        case ControlAPI.configError:
            self.init(code: Self.usage, message: error.message)
        case ControlAPI.errorName(.unknownName):
            self.init(code: Self.usage, message: error.message)
        default:
            self.init(code: Self.failed, message: error.message)
        }
    }
}
