import AdvertiserConfig
import AdvertiserControl
import AdvertiserDaemon
import ArgumentParser
import DBus
import Dispatch
import Foundation
import Logging
import PeripheralBlueZ

/// `bleadvd`: keeps the configured advertisements on air through BlueZ.
@main
struct Bleadvd: AsyncParsableCommand {
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
            (a bad config is refused and nothing on air changes).

            Exit status: 0 stopped cleanly; 1 runtime failure (no system bus, name taken, bus \
            lost); 2 usage or config error. See bleadvd(8) and bleadvd.toml(5).
            """)

    @Option(name: .shortAndLong, help: ArgumentHelp("The config file.", valueName: "path"))
    var config: String = DaemonConfig.defaultPath

    @Option(help: ArgumentHelp("The adapter to use, e.g. hci0 (overrides the config's adapter).", valueName: "name"))
    var adapter: String?

    @Option(help: ArgumentHelp("The lowest level logged: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: LogLevel = .info

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel.rawValue)!
        LoggingSystem.bootstrap { JournalLogHandler(label: $0, level: level) }
        let logger = Logger(label: "bleadvd")
        let settings: DaemonConfig
        do {
            settings = try ConfigParser.load(path: config)
        } catch {
            logger.critical("\(error)")
            throw ExitCode(2)
        }
        let connection: DBusConnection
        do {
            connection = try await DBusConnection.connect(to: .system)
        } catch {
            logger.critical("cannot connect to the system bus: \(error)")
            throw ExitCode(1)
        }
        let environment = ProcessInfo.processInfo.environment
        let notifier = SystemdNotifier(environment: environment)
        let manager = BlueZPeripheralManager(connection: connection, logger: logger)
        let daemon = Daemon(
            config: settings, configPath: config, adapter: adapter, manager: manager, connection: connection,
            clock: ContinuousClock(), notifier: notifier, logger: logger)
        // Signals, and -1 when the bus connection is lost, in one stream.
        let (events, continuation) = AsyncStream<Int32>.makeStream()
        let sources = Self.watchSignals(into: continuation)
        defer { sources.forEach { $0.cancel() } }
        let busWatch = Task {
            for await event in await connection.events() where event == .disconnected {
                continuation.yield(-1)
                return
            }
        }
        defer { busWatch.cancel() }
        do {
            try await daemon.start()
        } catch let error as DBusError where error.name == .nameTaken {
            logger.critical("another bleadvd is running: \(error.message)")
            throw ExitCode(1)
        } catch let error as DBusError where error.name == .accessDenied {
            logger.critical("the system bus refused the name \(ControlAPI.busName): is /usr/share/dbus-1/system.d/org.bleadvd.Advertiser.conf installed and the bus reloaded? (\(error.message))")
            throw ExitCode(1)
        }
        let watchdog = SystemdNotifier.watchdogInterval(environment: environment).map { interval in
            Task {
                while !Task.isCancelled {
                    notifier.notify("WATCHDOG=1")
                    try? await Task.sleep(for: interval / 2)
                }
            }
        }
        defer { watchdog?.cancel() }
        for await signal in events {
            switch signal {
            case SIGHUP:
                logger.notice("SIGHUP: reloading \(config)")
                try? await daemon.reload()
            case -1:
                logger.critical("lost the system bus; exiting so that systemd restarts bleadvd")
                throw ExitCode(1)
            default:
                logger.notice("signal \(signal): unregistering and stopping")
                await daemon.shutdown()
                return
            }
        }
    }

    /// Delivers SIGTERM, SIGINT and SIGHUP to `continuation` through Dispatch (which installs
    /// its own handlers). The sources deliver until cancelled.
    static func watchSignals(into continuation: AsyncStream<Int32>.Continuation) -> [any DispatchSourceSignal] {
        let queue = DispatchQueue(label: "bleadvd.signals")
        return [SIGTERM, SIGINT, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }
}

/// `--log-level`: swift-log's levels, by name.
enum LogLevel: String, CaseIterable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical
}

