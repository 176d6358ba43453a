import AdvertiserConfig
import AdvertiserDaemon
import DBus
import Foundation
import Logging
import Peripheral
import PeripheralMocks
import TestSupport

/// The daemon in this process over the counting mock, owning its name on a private bus; the
/// real `bleadvctl` binary talks to it there.
struct DaemonSession {
    static let config = """
        [advertisement.heart]
        local_name = "Thermo-1"
        service_uuids = ["180D"]

        [advertisement.door]
        enabled = false
        type = "broadcast"
        manufacturer_data = { "0xFFFF" = "0102" }
        """

    let bus: PrivateBus
    let mock = MockPeripheralManager()
    let clock = ManualClock()
    let connection: DBusConnection
    let daemon: Daemon<ManualClock>
    let configPath: String
    /// Where the daemon records the bonds its windows made (a folder of the private bus's).
    let bondRecord: BondRecord
    /// What the daemon told systemd.
    let notify: NotifySocket
    /// Where the test asks the daemon's loop to reload or stop, as signals do.
    let requests: AsyncStream<Daemon<ManualClock>.Request>.Continuation
    /// The daemon's loop: ends when asked to stop, fails when it cannot go on.
    let running: Task<Void, any Error>
    /// Whatever a test needs alive as long as the session (a listener's connection).
    private let kept = Kept()
    /// The daemon's journal, each line as `JournalLogHandler` writes it (priority prefix, escaped).
    let logs = LogLines { event, metadata in JournalLogHandler.line(event, metadata: metadata) }

    /// Keeps `object` alive as long as the session.
    func keep(_ object: some Sendable & AnyObject) {
        kept.append(object)
    }

    /// hci0's address, which encrypted BTHome is sealed for.
    static let address = "54:48:E6:8F:80:A5"

    /// A daemon running its loop, READY; `heart` is on air (enabled), `door` is off.
    /// - Parameters:
    ///   - script: scripts the mock further before the daemon starts.
    ///   - waitForReady: whether to return only after READY=1.
    ///   - joiner: joins Improv's networks and tells whether the Wi-Fi is connected; nil for the
    ///     config's.
    ///   - trusts: whether a local user may see secured values (the tests run as root, whom
    ///     LocalTrust trusts).
    ///   - auditDelay: the module's self-check; off unless a test is about it (its timer would
    ///     be one more sleeper on the manual clock).
    init(
        config: String = Self.config, bus: PrivateBus? = nil, watchdog: Duration? = nil, auditDelay: Duration? = nil,
        waitForReady: Bool = true, joiner: (any NetworkJoining)? = nil,
        script: (MockPeripheralManager) -> Void = { _ in },
        loadConfig: @escaping Daemon<ManualClock>.ConfigLoader = { path throws(ConfigError) in try ConfigParser.load(path: path) },
        trusts: @escaping @Sendable (UInt32) -> Bool = LocalTrust.isTrusted(uid:)
    ) async throws {
        self.bus = try bus ?? PrivateBus()
        configPath = self.bus.folder.appendingPathComponent("bleadvd.toml").path
        bondRecord = BondRecord(directory: self.bus.folder.appendingPathComponent("state").path)
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0", address: Self.address)])))
        mock.scriptStart(.always(.success(RegistrationID("/org/bleadvd/advertisement/1"))))
        mock.scriptStop(.always(.success(())))
        mock.scriptAudit(.always(.success([])))
        mock.scriptBonds(.always(.success([])))
        script(mock)
        connection = try await DBusConnection.connect(to: .address(self.bus.address))
        notify = try NotifySocket(in: self.bus.folder, name: "notify-\(UUID().uuidString.prefix(8))")
        let daemon = Daemon(
            config: try ConfigParser.load(path: configPath), configPath: configPath, manager: mock,
            bus: DBusControlBus(connection: connection), clock: clock, notifier: SystemdNotifier(environment: ["NOTIFY_SOCKET": notify.path]),
            counters: MockCounters(), bondRecord: bondRecord, trusts: trusts, loadConfig: loadConfig, auditDelay: auditDelay, joiner: joiner,
            logger: logs.logger())
        self.daemon = daemon
        let (stream, requests) = AsyncStream<Daemon<ManualClock>.Request>.makeStream()
        self.requests = requests
        running = Task { try await daemon.run(requests: stream, watchdog: watchdog) }
        if waitForReady { try await notify.waitFor("READY=1") }
    }

    /// Runs `bleadvctl` against the daemon's bus.
    func ctl(_ arguments: String...) async throws -> ProgramResult {
        try await ctl(arguments)
    }

    /// Runs `bleadvctl` with `arguments` against the daemon's bus.
    func ctl(_ arguments: [String]) async throws -> ProgramResult {
        try await runProgram(product("bleadvctl"), arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
    }

    /// Replaces the config file (for reload).
    func writeConfig(_ text: String) throws {
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
    }
}

/// Objects kept alive with a session.
private final class Kept: @unchecked Sendable {
    private let lock = NSLock()
    private var objects: [AnyObject] = []

    func append(_ object: AnyObject) {
        lock.withLock { objects.append(object) }
    }
}

extension MockPeripheralManager {
    /// The agent's calls all succeed: registered as `/org/bleadvd/agent`, the adapter opened
    /// and closed as asked.
    func scriptAgent() {
        scriptRegisterAgent(.always(.success(RegistrationID("/org/bleadvd/agent"))))
        scriptUnregisterAgent(.always(.success(())))
        scriptSetPairable(.always(.success(())))
    }
}
