import AdvertiserControl
import AdvertiserDaemon
import DBus
import Foundation
import Logging
import Peripheral
import PeripheralBlueZ
import PeripheralMocks
import TestSupport
import Testing

/// systemd/org.bleadvd.Advertiser.conf on a bus with the system bus's default-deny policy.
@Suite("The D-Bus policy")
struct PolicyTests {
    static let policy = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("systemd/org.bleadvd.Advertiser.conf").path

    func call(_ session: DaemonSession, _ member: String, _ arguments: [String] = [], as user: String? = nil) async throws -> ProgramResult {
        let send = ["/usr/bin/dbus-send", "--bus=\(try session.bus.address)", "--print-reply", "--dest=org.bleadvd.Advertiser",
                    "/org/bleadvd/Advertiser", "org.bleadvd.Advertiser1.\(member)"] + arguments
        guard let user else { return try await runProgram(send[0], Array(send.dropFirst())) }
        return try await runProgram("/usr/sbin/runuser", ["-u", user, "--"] + send)
    }

    @Test("root may own the name and call On")
    func rootMayCallOn() async throws {
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [Self.policy]))

        let result = try await call(session, "On", ["array:string:door"])

        #expect(result.status == 0, "\(result.errors)")
        #expect(session.mock.startAdvertisingCallCount == 2)
    }

    @Test("an unprivileged user gets AccessDenied for each method the contract keeps to root and its group",
          arguments: ControlAPI.Method.all.filter { $0.access != .everyone })
    func othersAreDenied(method: ControlAPI.Method) async throws {
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [Self.policy]))

        let result = try await call(session, method.name, as: "nobody")

        #expect(result.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(result.errors)")
        #expect(session.mock.stopAdvertisingCallCount == 0)
    }

    @Test("an unprivileged user may call each method the contract opens to everyone",
          arguments: ControlAPI.Method.all.filter { $0.access == .everyone })
    func othersMayRead(method: ControlAPI.Method) async throws {
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [Self.policy]))

        let result = try await call(session, method.name, as: "nobody")

        #expect(!result.errors.contains("AccessDenied"), "\(result.errors)")
    }

    @Test("an unprivileged user gets AccessDenied for a member the contract does not have")
    func othersAreDeniedUnknownMembers() async throws {
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [Self.policy]))

        let result = try await call(session, "Frobnicate", as: "nobody")

        #expect(result.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(result.errors)")
    }

    /// What a caller may try beside the control API: the interfaces of the objects bleadvd
    /// exports for BlueZ, and the control interface at another path.
    static let beyondTheControlAPI: [(path: String, member: String, arguments: [String])] = [
        ("/org/bleadvd/gatt/app1/service0/char0", "org.bluez.GattCharacteristic1.WriteValue", ["array:byte:1"]),
        ("/org/bleadvd/gatt/app1/service0/char0", "org.bluez.GattCharacteristic1.ReadValue", []),
        ("/org/bleadvd/gatt/app1/service0/char0/desc0", "org.bluez.GattDescriptor1.ReadValue", []),
        ("/org/bleadvd/advertisement/advertisement1", "org.bluez.LEAdvertisement1.Release", []),
        ("/org/bleadvd/advertisement/advertisement1", "org.freedesktop.DBus.Properties.Set",
         ["string:org.bluez.LEAdvertisement1", "string:TxPower", "variant:int16:5"]),
        ("/org/bleadvd/gatt/app1", "org.freedesktop.DBus.ObjectManager.GetManagedObjects", []),
        ("/org/bleadvd/agent", "org.bluez.Agent1.RequestAuthorization", ["objpath:/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF"]),
        ("/org/bleadvd/Other", "org.bleadvd.Advertiser1.Off", []),
    ]

    /// What bluetoothd (root) calls back: one member of each interface.
    static let bluetoothdCalls: [(path: String, member: String, arguments: [String])] = [
        ("/org/bleadvd/gatt/app1/service0/char0", "org.bluez.GattCharacteristic1.ReadValue", []),
        ("/org/bleadvd/gatt/app1/service0/char0/desc0", "org.bluez.GattDescriptor1.ReadValue", []),
        ("/org/bleadvd/advertisement/advertisement1", "org.bluez.LEAdvertisement1.Release", []),
        ("/org/bleadvd/gatt/app1", "org.freedesktop.DBus.ObjectManager.GetManagedObjects", []),
        ("/org/bleadvd/advertisement/advertisement1", "org.freedesktop.DBus.Properties.GetAll", ["string:org.bluez.LEAdvertisement1"]),
        ("/org/bleadvd/agent", "org.bluez.Agent1.RequestAuthorization", ["objpath:/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF"]),
    ]

    func send(_ session: DaemonSession, path: String, _ member: String, _ arguments: [String], as user: String) async throws -> ProgramResult {
        try await runProgram("/usr/sbin/runuser", ["-u", user, "--", "/usr/bin/dbus-send", "--bus=\(try session.bus.address)",
                                                   "--print-reply", "--dest=org.bleadvd.Advertiser", path, member] + arguments)
    }

    @Test("an unprivileged user is refused by the bus everything beyond the control API",
          arguments: Self.beyondTheControlAPI.indices)
    func othersAreDeniedTheBlueZObjects(index: Int) async throws {
        let (path, member, arguments) = Self.beyondTheControlAPI[index]
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [Self.policy]))

        let result = try await send(session, path: path, member, arguments, as: "nobody")

        #expect(result.errors.contains("org.freedesktop.DBus.Error.AccessDenied: Rejected send message"), "\(result.errors)")
    }

    @Test("a member of the group is refused by the bus everything beyond the control API",
          arguments: Self.beyondTheControlAPI.indices)
    func groupIsDeniedTheBlueZObjects(index: Int) async throws {
        let (path, member, arguments) = Self.beyondTheControlAPI[index]
        let file = try Self.policyForNogroup()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [file]))

        let result = try await send(session, path: path, member, arguments, as: "nobody")

        #expect(result.errors.contains("org.freedesktop.DBus.Error.AccessDenied: Rejected send message"), "\(result.errors)")
    }

    /// root gets through the bus to the interfaces bluetoothd (a root process) calls back, and
    /// bleadvd itself answers only the bluetoothd it registered with (BlueZGATTContractTests,
    /// BlueZContractTests): here no object is exported, and bleadvd says so.
    @Test("root reaches the interfaces bluetoothd calls back, and bleadvd answers for them", arguments: Self.bluetoothdCalls.indices)
    func rootReachesTheBlueZObjects(index: Int) async throws {
        let (path, member, arguments) = Self.bluetoothdCalls[index]
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [Self.policy]))

        let result = try await send(session, path: path, member, arguments, as: "root")

        // No object is exported there: bleadvd answers (UnknownObject, or UnknownMethod from the
        // object manager's root), the bus did not refuse.
        #expect(result.errors.contains("org.freedesktop.DBus.Error.Unknown"), "\(result.errors)")
        #expect(!result.errors.contains("AccessDenied"), "\(result.errors)")
    }

    @Test("root is refused by the bus the control interface at another path")
    func rootIsDeniedOtherPaths() async throws {
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [Self.policy]))

        let result = try await send(session, path: "/org/bleadvd/Other", "org.bleadvd.Advertiser1.Off", [], as: "root")

        #expect(result.errors.contains("org.freedesktop.DBus.Error.AccessDenied: Rejected send message"), "\(result.errors)")
    }

    /// The policy with its group section naming `nogroup`, nobody's group, instead of bleadvd.
    static func policyForNogroup() throws -> String {
        let policy = try String(contentsOfFile: Self.policy, encoding: .utf8)
            .replacingOccurrences(of: "<policy group=\"bleadvd\">", with: "<policy group=\"nogroup\">")
        guard policy.contains("<policy group=\"nogroup\">") else { throw TestFailure("the policy has no section for group bleadvd") }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bleadvd-policy-\(UUID()).conf").path
        try policy.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// The policy with its group section naming `nogroup`, nobody's group, instead of bleadvd
    /// (which this machine need not have): what the section grants its members. (The real group
    /// is tested in the systemd test bed, scenario 60.)
    @Test("a member of the policy's group may call each method the contract opens to the group or everyone",
          arguments: ControlAPI.Method.all.filter { $0.access != .root })
    func groupMayCallItsMethods(method: ControlAPI.Method) async throws {
        let file = try Self.policyForNogroup()
        defer { try? FileManager.default.removeItem(atPath: file) }
        // bleadvd trusts nogroup's members as it trusts group bleadvd's (Subscribe asks).
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [file]), trusts: { _ in true })

        let result = try await call(session, method.name, as: "nobody")

        #expect(!result.errors.contains("AccessDenied"), "\(result.errors)")
    }

    @Test("a member of the policy's group gets AccessDenied for each method the contract keeps to root (pairing, bonds, Improv)",
          arguments: ControlAPI.Method.all.filter { $0.access == .root })
    func groupIsDeniedRootsMethods(method: ControlAPI.Method) async throws {
        let file = try Self.policyForNogroup()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let session = try await DaemonSession(bus: try await PrivateBus(systemPolicy: [file]))

        let result = try await call(session, method.name, as: "nobody")

        #expect(result.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(result.errors)")
        #expect(session.mock.calls.removedBonds.isEmpty)
    }

    // MARK: Who is connected

    /// The signals that say who is connected: a link's start, what it carries, a subscription,
    /// a write (it names the central), its end.
    static let linkSignals = Set([ControlAPI.Connected.name, ControlAPI.LinkChanged.name, ControlAPI.Subscription.name, ControlAPI.Written.name, ControlAPI.Disconnected.name])

    /// The session's config with a characteristic a central may write: `lamp.brightness`.
    static let writable = DaemonSession.config + "\n\n" + ConfigFixtures.lamp + ConfigFixtures.lampBrightness

    /// A session on `bus` with ``writable``'s application registered.
    func linkSession(_ bus: PrivateBus) async throws -> DaemonSession {
        try await DaemonSession(config: Self.writable, bus: bus) { mock in
            mock.scriptRegisterApplication(.always(.success(RegistrationID("/org/bleadvd/gatt/app1"))))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptAgent()
            mock.scriptUpdateValue(.always(.success(())))
        }
    }

    /// `gdbus monitor` as `user` on the daemon's unique name: a plain subscriber (an AddMatch
    /// for the daemon's signals; no eavesdropping, no monitor), started. Its match may not be in
    /// place yet when it prints who owns the name (it lost a `Connected` 1 run in 3): see
    /// ``prime(_:_:)``.
    func listener(_ session: DaemonSession, as user: String) async throws -> Child {
        let daemon = try #require(try await session.connection?.nameOwner(ControlAPI.busName))
        let child = try Child("/usr/sbin/runuser", ["-u", user, "--", "/usr/bin/gdbus", "monitor", "--address", try session.bus.address,
                                                    "--dest", daemon])
        while try await !PrivateBus.line(from: child.stdout).contains("is owned by") {}
        return child
    }

    /// Turns `door` on and off until each of `listeners` printed a StateChanged, which everyone
    /// receives: their match rules are in place.
    func prime(_ session: DaemonSession, _ listeners: Child...) async throws {
        let toggling = Task {
            var on = true
            while !Task.isCancelled {
                try? await on ? session.daemon.advertising.on(["door"]) : session.daemon.advertising.off(["door"])
                on.toggle()
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { toggling.cancel() }
        for listener in listeners { _ = try await signals(from: listener, until: "StateChanged") }
    }

    /// The daemon's signals `listener` prints (`Connected ('AA:…', 'hci0')`), up to and
    /// including the first that begins with `last`.
    func signals(from listener: Child, until last: String) async throws -> [String] {
        var signals: [String] = []
        while !(signals.last?.hasPrefix(last) ?? false) {
            let line = try await PrivateBus.line(from: listener.stdout)
            if let match = line.firstMatch(of: #/org\.bleadvd\.Advertiser1\.(.+)$/#) { signals.append(String(match.1)) }
        }
        return signals
    }

    /// The link signals among `signals`, by member.
    static func links(_ signals: [String]) -> Set<String> {
        Set(signals.compactMap { $0.split(separator: " ").first.map(String.init) }.filter(linkSignals.contains))
    }

    /// One central's link on the mock, each step once the last was announced to `witness` (a
    /// primed listener that may hear them): up, a read with its MTU, a subscription, a write,
    /// its end.
    func linkLife(_ session: DaemonSession, heardBy witness: Child) async throws -> [String] {
        let phone = "AA:BB:CC:DD:EE:01", level = GATTCharacteristicID(service: "lamp", characteristic: "brightness")
        session.mock.emit(.connected(central: phone, adapter: "hci0"))
        var heard = try await signals(from: witness, until: "Connected")
        session.mock.emit(.gatt(GATTEvent(level, .read, central: phone, mtu: 185)))
        heard += try await signals(from: witness, until: "LinkChanged")
        session.mock.emit(.gatt(GATTEvent(level, .subscribed, central: phone)))
        heard += try await signals(from: witness, until: "Subscription")
        session.mock.emit(.gatt(GATTEvent(level, .written([7], .number(7)), central: phone)))
        heard += try await signals(from: witness, until: "Written")
        session.mock.emit(.disconnected(central: phone, adapter: "hci0"))
        heard += try await signals(from: witness, until: "Disconnected")
        return heard
    }

    @Test("a local user outside root and group bleadvd listening to the daemon hears none of a link's signals (Connected, LinkChanged, Subscription, Written, Disconnected), which root hears: who is connected is the owner's business",
          .timeLimit(.minutes(3)))
    func othersDoNotHearWhoIsConnected() async throws {
        let session = try await linkSession(try await PrivateBus(systemPolicy: [Self.policy]))
        let root = try await listener(session, as: "root")
        let stranger = try await listener(session, as: "nobody")
        defer { root.kill(SIGTERM); stranger.kill(SIGTERM) }
        try await prime(session, root, stranger)

        let rootHeard = try await linkLife(session, heardBy: root)
        // heart's StateChanged, which everyone hears, after them: the stranger heard by then
        // whatever it was let.
        try await session.daemon.advertising.off(["heart"])
        let strangerHeard = try await signals(from: stranger, until: "StateChanged ('heart'")

        #expect(Self.links(rootHeard) == Self.linkSignals, "\(rootHeard)")
        #expect(Self.links(strangerHeard) == [], "\(strangerHeard)")
    }

    /// The policy with the section for `section` (`group="bleadvd"`, `user="bleadvd"`) naming
    /// `nobody`'s instead (`nogroup`, `nobody`): what the section grants.
    static func policy(giving section: String, to replacement: String) throws -> String {
        let policy = try String(contentsOfFile: Self.policy, encoding: .utf8)
            .replacingOccurrences(of: "<policy \(section)>", with: "<policy \(replacement)>")
        guard policy.contains("<policy \(replacement)>") else { throw TestFailure("the policy has no section <policy \(section)>") }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bleadvd-policy-\(UUID()).conf").path
        try policy.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test("a member of group bleadvd, and user bleadvd, listening to the daemon hear each of a link's signals",
          .timeLimit(.minutes(3)), arguments: [("group=\"bleadvd\"", "group=\"nogroup\""), ("user=\"bleadvd\"", "user=\"nobody\"")])
    func groupAndUserHearWhoIsConnected(section: String, nobodys: String) async throws {
        let file = try Self.policy(giving: section, to: nobodys)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let session = try await linkSession(try await PrivateBus(systemPolicy: [file]))
        let member = try await listener(session, as: "nobody")
        defer { member.kill(SIGTERM) }
        try await prime(session, member)

        let heard = try await linkLife(session, heardBy: member)

        #expect(Self.links(heard) == Self.linkSignals, "\(heard)")
    }

    // MARK: What user bleadvd may call of BlueZ's

    /// The policy with its section for user bleadvd naming `nobody` (this machine need not have
    /// the user), beside BlueZ's own policy as Debian ships it: root owns org.bluez, and every
    /// user may send it anything.
    /// The optional drop-in that closes BlueZ's doors to local users outside root and group
    /// bluetooth.
    static let lockdown = ContractTests.repository.appendingPathComponent("systemd/bluez-lockdown.conf").path

    static func bluezBus(lockdown: Bool = false) async throws -> PrivateBus {
        let policy = try String(contentsOfFile: Self.policy, encoding: .utf8)
            .replacingOccurrences(of: "<policy user=\"bleadvd\">", with: "<policy user=\"nobody\">")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bleadvd-policy-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let ours = folder.appendingPathComponent("bleadvd.conf").path
        let bluez = folder.appendingPathComponent("bluetooth.conf").path
        try policy.write(toFile: ours, atomically: true, encoding: .utf8)
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <policy user="root"><allow own="org.bluez"/><allow send_destination="org.bluez"/></policy>
              <policy context="default"><allow send_destination="org.bluez"/></policy>
            </busconfig>
            """.write(toFile: bluez, atomically: true, encoding: .utf8)
        return try await PrivateBus(systemPolicy: [bluez] + (lockdown ? [Self.lockdown] : []) + [ours])
    }

    func callBlueZ(_ bus: PrivateBus, _ interface: String, _ member: String, as user: String) async throws -> ProgramResult {
        try await runProgram("/usr/sbin/runuser", ["-u", user, "--", "/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply",
                                                   "--dest=org.bluez", "/org/bluez/hci0", "\(interface).\(member)"])
    }

    @Test("user bleadvd may call each BlueZ method bleadvd calls", arguments: BlueZ.Method.allCases)
    func bleadvdMayCallItsBlueZMethods(method: BlueZ.Method) async throws {
        let bus = try await Self.bluezBus()
        let standIn = try await BlueZStandIn(bus: bus)
        defer { withExtendedLifetime(standIn) {} }

        let result = try await callBlueZ(bus, method.interface, method.member, as: "nobody")

        #expect(!result.errors.contains("AccessDenied"), "\(result.errors)")
    }

    @Test("user bleadvd gets AccessDenied for BlueZ's methods bleadvd does not call, which BlueZ's own policy opens to every user", arguments: [
        ("org.bluez.Adapter1", "StartDiscovery"), ("org.bluez.Device1", "Pair"), ("org.bluez.Device1", "Connect"),
        ("org.freedesktop.DBus.Properties", "Get"), ("org.bluez.AgentManager1", "Frobnicate"),
    ])
    func bleadvdIsDeniedOtherBlueZMethods(interface: String, member: String) async throws {
        let bus = try await Self.bluezBus()
        let standIn = try await BlueZStandIn(bus: bus)
        defer { withExtendedLifetime(standIn) {} }

        let denied = try await callBlueZ(bus, interface, member, as: "nobody")
        let otherUser = try await callBlueZ(bus, interface, member, as: "daemon")

        #expect(denied.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(denied.errors)")
        // The same call from another user passes the bus (BlueZ's policy): the deny is ours.
        #expect(!otherUser.errors.contains("AccessDenied"), "\(otherUser.errors)")
    }

    /// The doors a local user finds open in Debian's bluetooth.conf: an agent of its own, an
    /// adapter made pairable, a bond removed.
    static let doors = [("org.bluez.AgentManager1", "RegisterAgent"), ("org.freedesktop.DBus.Properties", "Set"), ("org.bluez.Adapter1", "RemoveDevice")]

    @Test("with the lockdown drop-in a local user may not register an agent, set an adapter's property or remove a device; without it, BlueZ's policy lets it", arguments: doors)
    func lockdownClosesTheDoors(interface: String, member: String) async throws {
        let open = try await Self.bluezBus()
        let closed = try await Self.bluezBus(lockdown: true)
        let standIns = [try await BlueZStandIn(bus: open), try await BlueZStandIn(bus: closed)]
        defer { withExtendedLifetime(standIns) {} }

        let before = try await callBlueZ(open, interface, member, as: "daemon")
        let after = try await callBlueZ(closed, interface, member, as: "daemon")
        let root = try await callBlueZ(closed, interface, member, as: "root")

        #expect(!before.errors.contains("AccessDenied"), "\(before.errors)")
        #expect(after.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(after.errors)")
        #expect(!root.errors.contains("AccessDenied"), "\(root.errors)")
    }

    @Test("with the lockdown drop-in user bleadvd still calls each BlueZ method bleadvd calls", arguments: BlueZ.Method.allCases)
    func lockdownKeepsBleadvd(method: BlueZ.Method) async throws {
        let bus = try await Self.bluezBus(lockdown: true)
        let standIn = try await BlueZStandIn(bus: bus)
        defer { withExtendedLifetime(standIn) {} }

        let result = try await callBlueZ(bus, method.interface, method.member, as: "nobody")

        #expect(!result.errors.contains("AccessDenied"), "\(result.errors)")
    }

    // MARK: Improv's join helper

    func callJoin(_ bus: PrivateBus, as user: String) async throws -> ProgramResult {
        try await runProgram("/usr/sbin/runuser", ["-u", user, "--", "/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply",
                                                   "--dest=\(JoinHelper.busName)", JoinHelper.path.rawValue, "\(JoinHelper.interface).Join",
                                                   "array:byte:0x41", "array:byte:"])
    }

    @Test("user bleadvd may call the join helper's Join, and another user is refused by the bus")
    func onlyBleadvdMayJoin() async throws {
        let bus = try await Self.bluezBus()
        let helper = try await DBusConnection.connect(to: .address(bus.address))
        // nobody plays user bleadvd here, for the policy and for the helper.
        let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
        let served = Task {
            try await JoinHelper.serve(
                on: helper, joiner: JoinHelperTests.Joiner(.success(nil)), clock: ManualClock(), logger: Logger(label: "test"), accepts: { $0 == nobody })
        }
        defer { served.cancel() }
        try await eventually("the join helper owns its name") { try await helper.nameOwner(JoinHelper.busName) != nil }

        let other = try await callJoin(bus, as: "daemon")
        let bleadvd = try await callJoin(bus, as: "nobody")

        #expect(other.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(other.errors)")
        #expect(bleadvd.errors.isEmpty, "\(bleadvd.errors)")
    }

    @Test("only root may own the join helper's name: not user bleadvd")
    func onlyRootOwnsTheHelperName() async throws {
        let bus = try await Self.bluezBus()

        let result = try await runProgram("/usr/sbin/runuser", ["-u", "nobody", "--", "/usr/bin/dbus-send", "--bus=\(bus.address)", "--print-reply",
                                                                "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.RequestName",
                                                                "string:\(JoinHelper.busName)", "uint32:4"])

        #expect(result.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(result.errors)")
    }
}
