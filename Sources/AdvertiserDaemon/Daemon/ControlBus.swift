#if canImport(Glibc)
import Glibc
#endif
package import AdvertiserConfig
package import AdvertiserControl
package import DBus
package import Events
import Peripheral

/// Where the daemon and its components send the control API's signals: any signal of
/// ``ControlAPI/signals``, to one bus name or to everyone, as NIO's channel takes any outbound
/// data. bleadvd's sends it on its D-Bus connection; a test's records it.
package protocol ControlSignalling: Sendable {
    /// Sends `signal`: to `destination` alone (a unique name), or to everyone when it is nil.
    func emit<Signal: ControlSignal>(_ signal: Signal, to destination: String?) async
}

extension ControlSignalling {
    /// Sends `signal` to everyone.
    package func emit<Signal: ControlSignal>(_ signal: Signal) async {
        await emit(signal, to: nil)
    }
}

/// The daemon's side of the system bus, a port: the control API's name and methods served, its
/// signals sent (``ControlSignalling``: one `emit` for all of them), and what the bus says of
/// callers. bleadvd's is its D-Bus connection
/// (``DBusControlBus``); the daemon's in-process tests use one that records, and call the
/// daemon's methods as the control API's handlers would.
package protocol ControlBus: ControlSignalling, PairingAnnouncing {
    /// The event loop the daemon and everything it runs are on.
    var eventLoop: EventLoop { get }
    /// Takes the control API's name and serves `targets` under it.
    /// - Throws: ``DaemonFailure`` when the name is taken or refused.
    func serve(_ targets: ControlTargets) async throws(DaemonFailure)
    /// Returns when the bus connection is lost.
    func lost() async
    /// Whether this process still owns the control API's name (the watchdog's round trip).
    func ownsName() async -> Bool
    /// The user `caller` (a unique name) runs as, when the bus can tell.
    func user(of caller: String) async -> UInt32?
    /// Returns once `caller` has left the bus.
    func departure(of caller: String) async
    /// What joins Wi-Fi networks for `config`, over this bus where it needs one.
    func joiner<C: Clock>(for config: ImprovConfig, clock: C) -> any NetworkJoining where C.Duration == Duration
}

/// The daemon's bus in bleadvd: a D-Bus connection to the system bus.
package struct DBusControlBus: ControlBus {
    let connection: DBusConnection

    package init(connection: DBusConnection) {
        self.connection = connection
    }

    package var eventLoop: EventLoop { connection.eventLoop }

    package func serve(_ targets: ControlTargets) async throws(DaemonFailure) {
        do {
            try await connection.requestName(ControlAPI.busName)
            try await ControlService.export(targets, on: connection)
        } catch let error as DBusError where error.name == .nameTaken {
            throw DaemonFailure("another bleadvd is running: \(error.message)")
        } catch let error as DBusError where error.name == .accessDenied {
            throw DaemonFailure(
                "the system bus refused the name \(ControlAPI.busName): is /usr/share/dbus-1/system.d/org.bleadvd.Advertiser.conf installed and the bus reloaded? (\(error.message))")
        } catch {
            throw DaemonFailure("cannot serve \(ControlAPI.busName) on the system bus: \(error)")
        }
    }

    package func lost() async {
        for await event in await connection.events() where event == .disconnected { return }
    }

    package func ownsName() async -> Bool {
        (try? await connection.nameOwner(ControlAPI.busName)) == connection.uniqueName
    }

    package func user(of caller: String) async -> UInt32? {
        try? await connection.unixUser(of: caller)
    }

    package func departure(of caller: String) async {
        try? await connection.departure(of: caller)
    }

    package func emit<Signal: ControlSignal>(_ signal: Signal, to destination: String?) async {
        await ControlService.emit(signal, to: destination, on: connection)
    }

    /// Through NetworkManager, bleadvd running as its own user asks the join helper, which runs
    /// as root (``JoinHelper``); run as root itself, it asks NetworkManager; or the config's
    /// program.
    package func joiner<C: Clock>(for config: ImprovConfig, clock: C) -> any NetworkJoining where C.Duration == Duration {
        switch config.joiner {
        case .networkManager where geteuid() != 0: HelperJoiner(connection: connection, clock: clock)
        case .networkManager: NetworkManagerJoiner(connection: connection, clock: clock)
        case .program(let program): ProgramJoiner(program: program, clock: clock, executor: eventLoop)
        }
    }
}
