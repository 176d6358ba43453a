import AdvertiserConfig
import AdvertiserControl
import AdvertiserDaemon
import ArgumentParser
import BleadvctlCommands
import CLinux
import DBus
import Events
import FoundationEssentials
import Glibc
import Logging
import Peripheral
import PeripheralBlueZ
import Support

/// `bleadvd`: keeps the configured advertisements on air through BlueZ.
@main
struct Bleadvd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bleadvd",
        abstract: "Keep Bluetooth LE advertisements on air through BlueZ.",
        discussion: """
            Runs in the foreground (as a systemd Type=notify service), registers the advertisements \
            of the config file with bluetoothd over the system bus, and keeps them on air: it \
            re-registers them after bluetoothd restarts or an adapter comes back, and retries \
            transient failures with backoff.

            Control it with bleadvctl (on, off, status, list, reload, preview) or over D-Bus: \
            name \(ControlAPI.busName), object \(ControlAPI.path), interface \(ControlAPI.interface).

            Signals: SIGTERM/SIGINT unregister everything and exit 0; SIGHUP re-reads the config \
            (a bad config is refused and nothing on air changes). SIGPIPE is ignored; SIGUSR1, \
            SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU and SIGXFSZ are logged and ignored.

            Exit status: 0 stopped cleanly; 1 runtime failure (no system bus, name taken, bus \
            lost); 2 usage or config error. See bleadvd(8) and bleadvd.toml(5).
            """,
        version: ControlAPI.version)

    @Option(name: .shortAndLong, help: ArgumentHelp("The config file.", valueName: "path"))
    var config: String = DaemonConfig.defaultPath

    @Option(help: ArgumentHelp("The adapter to use, by name (hci0) or address (00:1A:7D:DA:71:13); overrides the config's adapter.", valueName: "adapter"))
    var adapter: String?

    @Option(help: ArgumentHelp("The lowest level logged: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: LogLevel = .info

    @Option(help: ArgumentHelp(
        "Where encrypted BTHome's counters and the record of the bonds bleadvd's pairing windows made are kept (default: $STATE_DIRECTORY, which systemd's StateDirectory= sets, or /var/lib/bleadvd).",
        valueName: "path"))
    var stateDirectory: String?

    @Flag(help: "Check the config file and exit: 0 when bleadvd would accept it, 2 with the error when not.")
    var checkConfig = false

    @Flag(help: ArgumentHelp(
        "Run as the Improv join helper: take one Join call on the system bus as org.bleadvd.Join, join the network through NetworkManager, answer, exit. Started as root by D-Bus activation (bleadvd-join.service), for bleadvd running as its own user; refuses to start unless the config's [improv] joins through NetworkManager."))
    var joinHelper = false

    /// Parses the arguments, then runs on one thread: this one, the event loop's, with every
    /// task preferring it (docs/ARCHITECTURE.md, "Concurrency"). A usage error is one escaped
    /// line and exit 2 (bleadvd(8), EXIT STATUS); ArgumentParser's own would print the argument
    /// raw, exit 64.
    static func main() {
        // One executable for both commands: bleadvctl is a link to this one.
        let name = CommandLine.arguments.first?.split(separator: "/").last
        if name == "bleadvctl" {
            BleadvctlCommand.main()
        }
        // And Improv's join program for wpa_supplicant, a link in /usr/libexec/bleadvd.
        if name.map(String.init) == JoinWPASupplicantProgram.name {
            Glibc.exit(joinWPASupplicant())
        }
        let command: Bleadvd
        do {
            command = try parse()
        } catch {
            guard exitCode(for: error) != .success else { exit(withError: error) }
            writeError("\(Untrusted.shown(message(for: error), limit: 1024)) (see 'bleadvd --help')")
            exit(withError: ExitCode(2))
        }
        let loop: EventLoop
        do {
            loop = try EventLoop()
        } catch {
            writeError("\(error)")
            exit(withError: ExitCode(1))
        }
        Task(executorPreference: loop) {
            do {
                try await command.serve(on: loop)
                exit()
            } catch {
                exit(withError: error)
            }
        }
        loop.run()
    }

    /// `join-wpa-supplicant` (``JoinWPASupplicantProgram``), on standard input and output.
    static func joinWPASupplicant() -> Int32 {
        var input = Spawn.standardInput(upTo: JoinWPASupplicantProgram.inputLimit)
        defer { input.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        return JoinWPASupplicantProgram.run(
            arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment, input: input,
            say: { line in
                let bytes = Array((line + "\n").utf8)
                _ = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            },
            pause: { sleep(1) })
    }

    func validate() throws {
        if let adapter, !DaemonConfig.isAdapter(adapter) {
            throw ValidationError("--adapter \(DaemonConfig.notAnAdapter(adapter))")
        }
    }

    /// Writes `bleadvd: TEXT` as one line on standard error, before or without the log.
    static func writeError(_ text: String) {
        let line = Array("bleadvd: \(text)\n".utf8)
        _ = line.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    func serve(on loop: EventLoop) async throws {
        if checkConfig {
            if ConfigCheck.isChild { throw ExitCode(ConfigCheck.childMain(file: config)) }
            do {
                let settings = try ConfigCheck.load(path: config, arguments: ["bleadvd", "--check-config", "--config", config])
                print(Untrusted.escaped("\(config): \(settings.advertisements.count) advertisement(s), \(settings.advertisements.values.filter(\.enabled).count) enabled"))
                return
            } catch {
                Self.writeError(Untrusted.shown(error.description, limit: 1024))
                throw ExitCode(2)
            }
        }
        let level = Logger.Level(rawValue: logLevel.rawValue)!
        LoggingSystem.bootstrap { JournalLogHandler(label: $0, level: level) }
        let logger = Logger(label: "bleadvd")
        if bleadvd_transparent_huge_pages_disabled() == 0 {
            logger.debug("transparent huge pages are still on for bleadvd (prctl refused): thread stacks may take 2 MiB each")
        }
        let settings: DaemonConfig
        do {
            settings = try await ConfigCheck.load(path: config)
        } catch {
            logger.critical("\(error)")
            throw ExitCode(2)
        }
        if joinHelper, settings.improv?.joiner != .networkManager {
            logger.error("join helper: refused: the config offers no Improv joining through NetworkManager ([improv], join = \"networkmanager\")")
            throw ExitCode(2)
        }
        let connection: DBusConnection
        do {
            connection = try await DBusConnection.connect(to: .system, on: loop)
        } catch {
            logger.critical("cannot connect to the system bus: \(error)")
            throw ExitCode(1)
        }
        if joinHelper {
            try await Self.serveJoin(connection: connection, loop: loop, logger: logger)
            return
        }
        // What a read, join or identify program leaves behind (a double fork, a setsid) becomes
        // bleadvd's child, to be killed with the program (Spawn.end).
        if bleadvd_adopt_orphans() == 1 {
            Spawn.adoptOrphans()
        } else {
            logger.warning("cannot adopt orphans (prctl PR_SET_CHILD_SUBREAPER: \(String(cString: strerror(errno)))): what a program leaves after a double fork may outlive it")
        }
        let environment = ProcessInfo.processInfo.environment
        // systemd passes StateDirectory= as a colon-separated list; bleadvd's unit names one.
        let state = stateDirectory ?? environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init) ?? "/var/lib/bleadvd"
        let daemon = Daemon(
            config: settings, configPath: config, adapter: adapter,
            manager: BlueZPeripheralManager(connection: connection, logger: logger, admits: { central in
                // Secured characteristics go to the centrals bonded in bleadvd's windows (or
                // adopted by root), while BlueZ keeps the bond, alone: BlueZ lets any local user
                // make a bond, and end one.
                BondRecord(directory: state).admits(central)
            }), bus: DBusControlBus(connection: connection),
            clock: LoopClock(on: loop),
            // Once ready, the read-only pages start-up read of bleadvd's file and libraries go
            // (linked with -z now, the loader is done with its tables too): what runs next reads
            // its own back. (Dropped before the log line: a message is only built at its level.)
            notifier: SystemdNotifier(environment: environment, afterReady: {
                let dropped = bleadvd_release_read_only_pages()
                logger.debug("dropped \(dropped / 1024) KiB of read-only pages of bleadvd's file and libraries; what runs next reads its own back")
            }),
            counters: CounterDirectory(path: state), bondRecord: BondRecord(directory: state),
            loadConfig: { path throws(ConfigError) in try await ConfigCheck.load(path: path) }, logger: logger)
        let (requests, post) = AsyncStream<Daemon<LoopClock>.Request>.makeStream()
        do {
            try Self.handleSignals(on: loop) { number in
                guard Self.actedOn.contains(number) else {
                    logger.notice("signal \(number) ignored: bleadvd acts on TERM, INT and HUP only")
                    return
                }
                logger.notice("signal \(number)")
                post.yield(number == SIGHUP ? .reload : .stop)
            }
        } catch {
            logger.critical("cannot watch signals: \(error)")
            throw ExitCode(1)
        }
        do {
            try await daemon.run(requests: requests, watchdog: SystemdNotifier.watchdogInterval(environment: environment))
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
    }

    /// `--join-helper`: one join for bleadvd, as root (``JoinHelper``), once the config was found
    /// to join through NetworkManager (before the bus is touched).
    static func serveJoin(connection: DBusConnection, loop: EventLoop, logger: Logger) async throws {
        let clock = LoopClock(on: loop)
        do {
            try await JoinHelper.serve(on: connection, joiner: NetworkManagerJoiner(connection: connection, clock: clock), clock: clock, logger: logger)
        } catch {
            logger.critical("join helper: cannot serve \(JoinHelper.busName): \(error)")
            throw ExitCode(1)
        }
    }

    /// The signals bleadvd acts on.
    static let actedOn: Set<Int32> = [SIGTERM, SIGINT, SIGHUP]
    /// Signals whose default would end the daemon, and which nobody needs to end it with:
    /// logged and ignored (TERM stops it; KILL and QUIT still end it at once).
    static let ignored: [Int32] = [SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ]

    /// Delivers the signals acted on and the ignored ones to `handler` on the loop (a signalfd)
    /// for as long as bleadvd runs. SIGPIPE is ignored silently: a write to a closed pipe
    /// (stderr whose reader went away) fails, it does not kill.
    static func handleSignals(on loop: EventLoop, _ handler: @escaping (Int32) -> Void) throws(EventLoopError) {
        signal(SIGPIPE, SIG_IGN)
        try loop.handleSignals(actedOn.sorted() + ignored, handler: handler)
    }
}
/// `--log-level`: swift-log's levels, by name.
enum LogLevel: String, CaseIterable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical
}

