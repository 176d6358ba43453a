#if canImport(Glibc)
import Glibc
#endif
package import DBus
package import Logging
package import Peripheral

/// Improv's joins through NetworkManager, done by a helper that runs as root, so that bleadvd's
/// own user needs no power over NetworkManager.
///
/// The process that parses what strangers send over the radio runs as user bleadvd; NetworkManager
/// authorizes `GetSecrets` on a saved connection with the same permission that adding one needs
/// (`settings.modify.system`), so a user allowed to join networks could read every saved Wi-Fi,
/// VPN and 802.1X secret. Instead bleadvd asks `org.bleadvd.Join` for each join: dbus-daemon
/// starts `bleadvd --join-helper` as root through systemd (`bleadvd-join.service`, D-Bus
/// activation), and lets only root and user bleadvd call its one method. The helper takes one
/// SSID and password, asks NetworkManager (which authorizes root without polkit), answers, and
/// exits. No polkit rule is installed; user bleadvd reads NetworkManager's properties (the Wi-Fi
/// state, the access points) as every user may.
package enum JoinHelper {
    /// The helper's bus name.
    package static var busName: String { "org.bleadvd.Join" }
    /// Its object.
    package static var path: DBusObjectPath { "/org/bleadvd/Join" }
    /// Its interface: `Join(ay ssid, ay password) → s address` ("" when NetworkManager gave none).
    package static var interface: String { "org.bleadvd.Join1" }
    /// The error a join that failed is answered with; its message says why, never the password.
    package static var failed: DBusError.Name { DBusError.Name(rawValue: "org.bleadvd.Join.Error.Failed") }
    /// How long bleadvd waits for an answer: NetworkManager's join gives up within 90 s.
    static var timeout: Duration { .seconds(120) }
    /// How long the helper waits for its call once started before it exits unasked. bleadvd
    /// starts it by calling `Join`, which dbus-daemon holds until the helper owns its name and
    /// then delivers at once: a helper that waits longer was started by someone else
    /// (`StartServiceByName` is open to every local user).
    package static var idle: Duration { .seconds(10) }

    /// Whether `uid` is bleadvd's own user, the one caller the helper joins for (root runs
    /// bleadvd's joins itself, through NetworkManager).
    package static func isBleadvd(uid: UInt32) -> Bool {
        guard let user = getpwnam(LocalTrust.userName) else { return false }
        return user.pointee.pw_uid == uid
    }

    /// Serves one `Join` on `connection` with `joiner`, then returns (after ``idle`` when none
    /// comes; a join that came is answered however long it takes). A call from a user `accepts`
    /// refuses (anyone but bleadvd's own, by default: the bus policy lets root in too) is
    /// answered `AccessDenied`, and the helper ends at once, having asked NetworkManager
    /// nothing. Takes the name last, once the object answers.
    /// - Throws: ``DBusError`` when the object cannot be exported or the name taken.
    package static func serve<C: Clock>(
        on connection: DBusConnection, joiner: any NetworkJoining, clock: C, logger: Logger,
        accepts: @escaping @Sendable (UInt32) -> Bool = isBleadvd(uid:)
    ) async throws where C.Duration == Duration {
        let (arrived, arrive) = AsyncStream<Void>.makeStream()
        let (answered, answer) = AsyncStream<Void>.makeStream()
        let join = DBusMethod(
            "Join", inputs: [DBusArgument("ssid", .array(.byte)), DBusArgument("password", .array(.byte))],
            outputs: [DBusArgument("address", .string)]
        ) { call in
            arrive.yield()
            defer { answer.yield() }
            let uid = try? await connection.unixUser(of: call.sender ?? "")
            guard let uid, accepts(uid) else {
                logger.warning("join helper: refused a Join from \(uid.map { "uid \($0)" } ?? "a caller the bus could not name"), which is not bleadvd's user; exiting")
                throw DBusError(.accessDenied, "the join helper joins networks for bleadvd's own user alone")
            }
            let credentials = try credentials(call.arguments)
            do {
                let address = try await joiner.join(credentials)
                logger.notice("join helper: joined \(credentials), address \(address ?? "not known")")
                return [.string(address ?? "")]
            } catch {
                logger.warning("join helper: could not join \(credentials): \(error)")
                throw DBusError(failed, "\(error)")
            }
        }
        try await connection.export([DBusInterface(name: interface, methods: [join])], at: path)
        try await connection.requestName(busName)
        // The idle time ends with a call's arrival: the join itself may take NetworkManager up
        // to 90 s (under load a join of 20 s was cut off when this waited for the answer).
        guard await Deadline.within(idle, on: clock, executor: connection.eventLoop, { () async -> Bool in
            for await _ in arrived { return true }
            return false
        }) == true else {
            logger.info("join helper: no join asked within \(idle); exiting")
            return
        }
        for await _ in answered { break }
        // The reply leaves after the handler returned: given a moment (of the wall's time, the
        // socket's) before the process ends.
        try? await Task.sleep(for: .seconds(1))
    }

    /// The credentials a call carries.
    /// - Throws: `InvalidArgs` for an SSID or a password that are none (``Improv/Credentials``):
    ///   the helper types them again, whoever called.
    static func credentials(_ arguments: [DBusValue]) throws(DBusError) -> Improv.Credentials {
        guard arguments.count == 2, let ssid = arguments[0].bytes, let password = arguments[1].bytes else {
            throw DBusError(.invalidArgs, "Join takes an SSID and a password, each as bytes")
        }
        guard let credentials = Improv.Credentials(ssid: ssid, password: password) else {
            throw DBusError(.invalidArgs, Improv.Credentials.refusal(ssid: ssid, password: password) ?? "no credentials")
        }
        return credentials
    }
}

/// Joins through the join helper (``JoinHelper``), and follows the Wi-Fi and lists the networks
/// in range through NetworkManager's properties, which every user may read. Without a scan
/// permission NetworkManager's `RequestScan` is refused: the networks listed are those of its
/// own scans (it scans every few minutes while not connected).
package struct HelperJoiner<C: Clock>: NetworkJoining where C.Duration == Duration {
    /// The system bus.
    let connection: DBusConnection
    /// What reads NetworkManager's state.
    let manager: NetworkManagerJoiner<C>

    /// A joiner asking the helper, and NetworkManager, on `connection`.
    package init(connection: DBusConnection, clock: C) {
        self.connection = connection
        self.manager = NetworkManagerJoiner(connection: connection, clock: clock)
    }

    package func join(_ credentials: Improv.Credentials) async throws -> String? {
        let reply: [DBusValue]
        do {
            reply = try await connection.call(
                destination: JoinHelper.busName, path: JoinHelper.path, interface: JoinHelper.interface, member: "Join",
                [.bytes(credentials.ssid), .bytes(credentials.password)], expecting: "s", timeout: JoinHelper.timeout)
        } catch let error as DBusError where error.name == JoinHelper.failed {
            throw NetworkManager.Failure(description: Untrusted.shown(error.message, limit: 300))
        } catch let error as DBusError {
            throw NetworkManager.Failure(description: "the join helper (\(JoinHelper.busName)) did not join: \(Untrusted.shown(error.description, limit: 300))")
        }
        return reply.first?.string.flatMap { $0.isEmpty ? nil : $0 }
    }

    package func networks() async throws -> [Improv.Network] {
        try await manager.networks()
    }

    package func wifi() async throws -> WifiWatch? {
        try await manager.wifi()
    }
}
