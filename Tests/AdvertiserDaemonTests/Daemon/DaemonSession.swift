import AdvertiserConfig
import AdvertiserControl
import AdvertiserDaemon
import AdvertiserDaemonTesting
import DBus
import Foundation
import Logging
import Peripheral
import PeripheralMocks
import TestSupport

/// The daemon in this process over the counting mock and the manual clock, running its loop, on
/// one of two buses: the in-memory one (``EmbeddedBus``, the default: the daemon's behaviour),
/// or a private dbus-daemon (`onDBus`: what only a real bus shows, its policy, marshalling and
/// the real `bleadvctl` binary talking to the daemon there, ``ctl(_:)``).
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

    /// The private dbus-daemon the daemon owns its name on (`onDBus`), else nil.
    let dbus: PrivateBus?
    /// The in-memory bus the daemon is on, unless it is on a dbus-daemon.
    let embedded: EmbeddedBus?
    /// The daemon's connection to the dbus-daemon (`onDBus`), else nil.
    let connection: DBusConnection?
    /// A folder of the session's own: the config file, the state directory, the notify socket.
    let folder: URL
    let mock = MockPeripheralManager()
    let clock = ManualClock()
    let daemon: Daemon<ManualClock>
    let configPath: String
    /// Where the daemon records the bonds its windows made (in the session's folder).
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

    /// The private dbus-daemon of a session made `onDBus`.
    var bus: PrivateBus {
        get throws {
            guard let dbus else { throw TestFailure("this session's daemon is on the in-memory bus: make it with onDBus: true") }
            return dbus
        }
    }

    /// A daemon running its loop, READY; `heart` is on air (enabled), `door` is off.
    /// - Parameters:
    ///   - onDBus: on a private dbus-daemon (`bus`, or a new one) rather than the in-memory bus.
    ///   - users: on the in-memory bus, the user of each caller (a unique name).
    ///   - folder: the session's folder (one the test wrote programs into, say); nil for a new one
    ///     (the dbus-daemon's, on one).
    ///   - refusal: on the in-memory bus, why the control API's name cannot be taken (nil: it can).
    ///   - script: scripts the mock further before the daemon starts.
    ///   - waitForReady: whether to return only after READY=1.
    ///   - joiner: joins Improv's networks and tells whether the Wi-Fi is connected; nil for the
    ///     config's.
    ///   - trusts: whether a local user may see secured values (the tests run as root, whom
    ///     LocalTrust trusts).
    ///   - auditDelay: the module's self-check; off unless a test is about it (its timer would
    ///     be one more sleeper on the manual clock).
    init(
        onDBus: Bool = false, config: String = Self.config, bus: PrivateBus? = nil, users: [String: UInt32] = [:], refusal: DaemonFailure? = nil,
        folder scratch: ScratchFolder? = nil,
        watchdog: Duration? = nil, auditDelay: Duration? = nil,
        waitForReady: Bool = true, joiner: (any NetworkJoining)? = nil,
        script: (MockPeripheralManager) -> Void = { _ in },
        loadConfig: @escaping Daemon<ManualClock>.ConfigLoader = { path throws(ConfigError) in try ConfigParser.load(path: path) },
        trusts: @escaping @Sendable (UInt32) -> Bool = LocalTrust.isTrusted(uid:)
    ) async throws {
        let controlBus: any ControlBus
        var scratch = scratch
        if onDBus || bus != nil {
            let dbus = if let bus { bus } else { try await PrivateBus() }
            let connection = try await DBusConnection.connect(to: .address(dbus.address))
            (self.dbus, self.connection, embedded, folder) = (dbus, connection, nil, scratch?.url ?? dbus.folder)
            controlBus = DBusControlBus(connection: connection)
        } else {
            let embedded = try EmbeddedBus(users: users, refusal: refusal)
            let own = try scratch ?? ScratchFolder("session")
            scratch = own
            (dbus, connection, self.embedded, folder) = (nil, nil, embedded, own.url)
            controlBus = embedded
        }
        if let scratch { kept.append(scratch) }
        configPath = folder.appendingPathComponent("bleadvd.toml").path
        bondRecord = BondRecord(directory: folder.appendingPathComponent("state").path)
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0", address: Self.address)])))
        mock.scriptStart(.always(.success(RegistrationID("/org/bleadvd/advertisement/1"))))
        mock.scriptStop(.always(.success(())))
        // A turn of the rotation (more advertisements than slots) is an in-place update.
        mock.scriptUpdate(.always(.success(())))
        mock.scriptAudit(.always(.success([])))
        mock.scriptBonds(.always(.success([])))
        script(mock)
        notify = try NotifySocket(in: folder, name: "notify-\(UUID().uuidString.prefix(8))")
        let daemon = Daemon(
            config: try ConfigParser.load(path: configPath), configPath: configPath, manager: mock,
            bus: controlBus, clock: clock, notifier: SystemdNotifier(environment: ["NOTIFY_SOCKET": notify.path]),
            counters: MockCounters(), bondRecord: bondRecord, trusts: trusts, loadConfig: loadConfig, auditDelay: auditDelay, joiner: joiner,
            logger: logs.logger())
        self.daemon = daemon
        let (stream, requests) = AsyncStream<Daemon<ManualClock>.Request>.makeStream()
        self.requests = requests
        running = Task { try await daemon.run(requests: stream, watchdog: watchdog) }
        if waitForReady { try await notify.waitFor("READY=1") }
    }

    /// Runs `bleadvctl` against the daemon's dbus-daemon (a session made `onDBus`).
    func ctl(_ arguments: String...) async throws -> ProgramResult {
        try await ctl(arguments)
    }

    /// Runs `bleadvctl` with `arguments` against the daemon's dbus-daemon.
    func ctl(_ arguments: [String]) async throws -> ProgramResult {
        try await runProgram(product("bleadvctl"), arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": try bus.address])
    }

    /// Asks the daemon's loop to stop, as SIGTERM does.
    func stop() {
        requests.yield(.stop)
    }

    /// The signals the daemon sent on the in-memory bus (``EmbeddedBus/all``).
    var signals: [EmbeddedBus.Sent] { embedded?.all ?? [] }

    /// The `Signal`s the daemon sent so far on the in-memory bus to `audience`, decoded.
    func sent<Signal: ControlSignal>(_ signal: Signal.Type, to audience: Audience = .either) -> [Signal] {
        signals.filter { audience.includes($0.destination) }.compactMap { $0.decoded(as: signal) }
    }

    /// The `Signal`s the daemon sends from now on, on the in-memory bus, to `audience`, that
    /// `match`, decoded (``EmbeddedBus/following()``).
    func following<Signal: ControlSignal>(
        _ signal: Signal.Type, to audience: Audience = .either, where match: @escaping @Sendable (Signal) -> Bool = { _ in true }
    ) throws -> Following<Signal> {
        guard let embedded else { throw TestFailure("this session's daemon is on a dbus-daemon: listen there") }
        return embedded.following().compactMap { sent in
            guard audience.includes(sent.destination), let payload = sent.decoded(as: signal), match(payload) else { return nil }
            return payload
        }.makeAsyncIterator()
    }

    /// What serves `part` of the control API on the in-memory bus, as the bus hands it calls
    /// (`(any PairingControl).self`: the pairing component).
    func serving<Part>(_ part: Part.Type) throws -> Part {
        guard let target = embedded?.targets?.first(part) else { throw TestFailure("nothing serves \(part) on the in-memory bus") }
        return target
    }

    /// Whom a signal went to.
    enum Audience: Sendable {
        /// A broadcast.
        case everyone
        /// The subscriber of that unique name alone.
        case subscriber(String)
        /// Either.
        case either

        /// Whether a signal sent to `destination` (nil: a broadcast) is this audience's.
        func includes(_ destination: String?) -> Bool {
            switch self {
            case .everyone: destination == nil
            case .subscriber(let name): destination == name
            case .either: true
            }
        }
    }

    /// Replaces the config file (for reload).
    func writeConfig(_ text: String) throws {
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
    }
}

/// The signals of one kind a test follows on the in-memory bus (``DaemonSession/following(_:to:where:)``).
typealias Following<Signal: ControlSignal> = AsyncCompactMapSequence<AsyncStream<EmbeddedBus.Sent>, Signal>.AsyncIterator

extension ControlAPI.Written {
    /// `service.characteristic VALUE`, or `(not shown)` for a value left out.
    var shown: String { "\(id) \(value.map(\.description) ?? "(not shown)")" }
}

/// Runs `body` with the daemon `session` makes, then stops it as SIGTERM does and waits for its
/// loop to end: a test whose daemon failed meanwhile, or will not stop, fails too.
func withRunningDaemon<T>(_ session: @autoclosure () async throws -> DaemonSession, _ body: (DaemonSession) async throws -> T) async throws -> T {
    let daemon = try await session()
    let result = try await body(daemon)
    daemon.stop()
    try await daemon.running.value
    return result
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
