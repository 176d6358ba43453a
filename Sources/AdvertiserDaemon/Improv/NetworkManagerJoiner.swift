package import DBus
package import Peripheral

/// Joins Wi-Fi networks through NetworkManager over the system bus (`[improv] join =
/// "networkmanager"`, the default), and lists the networks in range for Improv's scan.
///
/// A join adds a connection (saved, so the box joins the network again after a reboot, and
/// marked as bleadvd's in its `user` setting) and activates it on NetworkManager's Wi-Fi
/// device, then waits until NetworkManager says it is activated (an address configured) or
/// failed; a connection that failed is deleted again, and one that connected replaces the
/// connections bleadvd added to that network before (never one it did not add).
/// NetworkManager lets root do this without asking polkit: bleadvd uses this joiner run as root,
/// and its join helper (``JoinHelper``, root) does; bleadvd running as its own user joins
/// through the helper (``HelperJoiner``).
package struct NetworkManagerJoiner<C: Clock>: NetworkJoining where C.Duration == Duration {
    /// The system bus.
    let connection: DBusConnection
    /// Whose sleeps pace the waits.
    let clock: C

    static var service: String { "org.freedesktop.NetworkManager" }
    static var managerPath: DBusObjectPath { "/org/freedesktop/NetworkManager" }
    static var deviceInterface: String { "org.freedesktop.NetworkManager.Device" }
    static var wirelessInterface: String { "org.freedesktop.NetworkManager.Device.Wireless" }
    static var activeInterface: String { "org.freedesktop.NetworkManager.Connection.Active" }
    /// How long a join may take: NetworkManager's own attempt gives up sooner.
    static var timeout: Duration { .seconds(90) }
    /// How long a scan is waited for before the networks NetworkManager knows are listed.
    static var scanWait: Duration { .seconds(10) }
    /// How often NetworkManager is asked while waiting.
    static var poll: Duration { .milliseconds(250) }

    /// A joiner asking NetworkManager on `connection`.
    package init(connection: DBusConnection, clock: C) {
        self.connection = connection
        self.clock = clock
    }

    typealias Failure = NetworkManager.Failure

    package func join(_ credentials: Improv.Credentials) async throws -> String? {
        let device = try await wifiDevice()
        let settings = NetworkManager.settings(for: credentials)
        // Why the device failed is in its StateChanged signal (the state it reaches after,
        // disconnected, carries no reason): watched from before the attempt.
        let changes = try await connection.signals(matching: DBusMatchRule(
            sender: Self.service, path: device, interface: Self.deviceInterface, member: "StateChanged"))
        let failure = Task(executorPreference: connection.eventLoop) { () -> UInt32? in
            var reason: UInt32?
            for await change in changes where change.body.first?.uint32 == NetworkManager.failedState {
                reason = change.body.last?.uint32
            }
            return reason
        }
        defer { failure.cancel() }
        let reply = try await ask(Self.managerPath, Self.service, "AddAndActivateConnection", [settings, .objectPath(device), .objectPath(.root)], expecting: "oo")
        guard let saved = reply[0].objectPath, let active = reply[1].objectPath else {
            throw Failure(description: "NetworkManager's answer to AddAndActivateConnection lacks its paths")
        }
        do {
            try await activated(active, on: device, failure: failure)
        } catch {
            _ = try? await object(Self.managerPath).call(Self.service, "DeactivateConnection", [.objectPath(active)])
            _ = try? await object(saved).call("org.freedesktop.NetworkManager.Settings.Connection", "Delete")
            throw error
        }
        await deleteOthers(for: credentials.ssid, keeping: saved)
        return await address(of: active)
    }

    package func networks() async throws -> [Improv.Network] {
        let device = try await wifiDevice()
        let before = try? await property(device, Self.wirelessInterface, "LastScan")
        // NetworkManager refuses a scan soon after its last one (then the list it has is recent),
        // and to a user without its scan permission (bleadvd's own: then the list is that of
        // its own scans): a refused scan is not waited for.
        let scanning = (try? await ask(device, Self.wirelessInterface, "RequestScan", [.variantDictionary([:])])) != nil
        var waited = Duration.zero
        while scanning, waited < Self.scanWait, (try? await property(device, Self.wirelessInterface, "LastScan")) == before {
            try await clock.sleep(for: Self.poll)
            waited += Self.poll
        }
        let paths = try await ask(device, Self.wirelessInterface, "GetAllAccessPoints", expecting: "ao")[0].arrayElements?.compactMap(\.objectPath) ?? []
        var accessPoints: [[String: DBusValue]] = []
        for path in paths {
            // An access point gone since the list was made is left out.
            guard let properties = try? await object(path).properties(of: "org.freedesktop.NetworkManager.AccessPoint") else { continue }
            accessPoints.append(properties)
        }
        return NetworkManager.networks(from: accessPoints)
    }

    /// Whether the Wi-Fi device is activated (connected, with its addresses), followed by its
    /// `StateChanged` signals (subscribed to before the state is read, so that no change falls
    /// between them).
    package func wifi() async throws -> WifiWatch? {
        let device = try await wifiDevice()
        let signals = try await connection.signals(matching: DBusMatchRule(
            sender: Self.service, path: device, interface: Self.deviceInterface, member: "StateChanged"))
        guard let state = try await property(device, Self.deviceInterface, "State")?.uint32 else {
            throw Failure(description: "NetworkManager's Wi-Fi device has no State")
        }
        let (changes, continuation) = AsyncStream<Bool>.makeStream()
        let follower = Task(executorPreference: connection.eventLoop) {
            for await signal in signals {
                if let new = signal.body.first?.uint32 { continuation.yield(new == NetworkManager.activatedState) }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in follower.cancel() }
        return WifiWatch(connected: state == NetworkManager.activatedState, changes: changes)
    }

    /// The first Wi-Fi device NetworkManager manages.
    func wifiDevice() async throws -> DBusObjectPath {
        let devices = try await ask(Self.managerPath, Self.service, "GetDevices", expecting: "ao")[0].arrayElements?.compactMap(\.objectPath) ?? []
        for device in devices {
            guard (try? await property(device, Self.deviceInterface, "DeviceType"))?.uint32 == 2,
                  (try? await property(device, Self.deviceInterface, "Managed"))?.boolean == true else { continue }
            return device
        }
        throw Failure(description: "NetworkManager manages no Wi-Fi device")
    }

    /// Deletes the other connections bleadvd added to the same network, once the new one is
    /// activated: NetworkManager would go on trying them (with an old password, say) beside it.
    /// Connections bleadvd did not add (an admin's 802.1X profile, a static address) are kept,
    /// whoever asks for a join to their network.
    func deleteOthers(for ssid: [UInt8], keeping saved: DBusObjectPath) async {
        let settings = "org.freedesktop.NetworkManager.Settings"
        guard let paths = try? await object("/org/freedesktop/NetworkManager/Settings").call(
            settings, "ListConnections", expecting: "ao")[0].arrayElements?.compactMap(\.objectPath) else { return }
        for path in paths where path != saved {
            guard let values = try? await object(path).call("\(settings).Connection", "GetSettings", expecting: "a{sa{sv}}")[0],
                  NetworkManager.isReplaced(values, byJoinTo: ssid) else { continue }
            _ = try? await object(path).call("\(settings).Connection", "Delete")
        }
    }

    /// Waits until `active` is activated; throws when it failed (with the reason `failure`
    /// saw the device fail for) or ``timeout`` passed first.
    func activated(_ active: DBusObjectPath, on device: DBusObjectPath, failure: Task<UInt32?, Never>) async throws {
        var waited = Duration.zero
        while waited < Self.timeout {
            // The active connection's object goes away once it failed.
            let state = (try? await property(active, Self.activeInterface, "State"))?.uint32 ?? 4
            if state == 2 { return }
            if state >= 3 {
                // The device's failure came before its active connection went: give the signal
                // a moment to be read.
                try await clock.sleep(for: Self.poll)
                failure.cancel()
                let reason = await failure.value
                throw Failure(description: "NetworkManager could not connect: \(reason.map(NetworkManager.reasonText) ?? "its connection was deactivated")")
            }
            try await clock.sleep(for: Self.poll)
            waited += Self.poll
        }
        throw Failure(description: "NetworkManager did not connect within \(Self.timeout.components.seconds) s")
    }

    /// The IPv4 address `active` got (IPv6 when it has none), or nil.
    func address(of active: DBusObjectPath) async -> String? {
        for (config, interface) in [("Ip4Config", "IP4Config"), ("Ip6Config", "IP6Config")] {
            guard let path = (try? await property(active, Self.activeInterface, config))?.objectPath, path != .root,
                  let data = try? await property(path, "org.freedesktop.NetworkManager.\(interface)", "AddressData"),
                  let address = NetworkManager.address(from: data) else { continue }
            return address
        }
        return nil
    }

    /// A property's value.
    /// - Throws: ``Failure`` when NetworkManager refuses (`NetworkManager refused Get: …`).
    func property(_ path: DBusObjectPath, _ interface: String, _ name: String) async throws -> DBusValue? {
        try await refused("Get") { try await object(path).property(name, of: interface) }
    }

    /// NetworkManager's object at `path`.
    private func object(_ path: DBusObjectPath) -> DBusProxy {
        DBusProxy(connection, destination: Self.service, path: path)
    }

    /// Calls NetworkManager; its refusal (polkit's no among them) becomes a ``Failure``.
    private func ask(
        _ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [], expecting: DBusSignature? = nil
    ) async throws -> [DBusValue] {
        try await refused(member) { try await object(path).call(interface, member, arguments, expecting: expecting) }
    }

    /// `body`'s result; NetworkManager's refusal of `member` becomes a ``Failure``.
    private func refused<T>(_ member: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as DBusError {
            throw Failure(description: "NetworkManager refused \(member): \(Untrusted.shown(error.description, limit: 200))")
        }
    }
}

/// What the joiner makes of NetworkManager's values and asks of it, apart from the calls.
enum NetworkManager {
    /// NM_DEVICE_STATE_ACTIVATED: connected, with its addresses.
    static var activatedState: UInt32 { 100 }
    /// NM_DEVICE_STATE_FAILED.
    static var failedState: UInt32 { 120 }

    /// The key of the mark each connection bleadvd adds carries in its `user` setting's data
    /// (keys are ASCII with at least one dot, NetworkManager's rule): what tells a join which
    /// saved connections are bleadvd's to replace.
    static var markKey: String { "org.bleadvd.improv" }

    /// A failure, said in a line.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The connection NetworkManager is asked to add: infrastructure Wi-Fi to `credentials`'
    /// SSID, WPA/WPA2 personal with their password (none: an open network), addresses by DHCP,
    /// marked as bleadvd's (``markKey``). The password is printable ASCII (``Improv/Credentials``),
    /// the string NetworkManager takes.
    static func settings(for credentials: Improv.Credentials) -> DBusValue {
        var sections: [String: DBusValue] = [
            "connection": .variantDictionary([
                "id": .string(String(decoding: credentials.ssid, as: UTF8.self)),
                "type": .string("802-11-wireless"),
            ]),
            "802-11-wireless": .variantDictionary([
                "ssid": .bytes(credentials.ssid),
                "mode": .string("infrastructure"),
            ]),
            "user": .variantDictionary([
                "data": .dictionary(key: .string, value: .string, [DBusDictEntry(.string(markKey), .string("improv"))]),
            ]),
        ]
        if !credentials.password.isEmpty {
            let password = String(decoding: credentials.password, as: UTF8.self)
            sections["802-11-wireless-security"] = .variantDictionary(["key-mgmt": .string("wpa-psk"), "psk": .string(password)])
        }
        return .dictionary(
            key: .string, value: .dictionary(key: .string, value: .variant),
            sections.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), $0.value) })
    }

    /// The SSID a connection's settings (`a{sa{sv}}`, as GetSettings gives them) join; nil for
    /// one that is not Wi-Fi.
    static func ssid(of settings: DBusValue) -> [UInt8]? {
        settings.dictionaryEntries?.first { $0.key.string == "802-11-wireless" }?.value.variantDictionary?["ssid"]?.bytes
    }

    /// Whether a join to `ssid` replaces a saved connection (its settings as GetSettings gives
    /// them): one to that SSID that carries bleadvd's mark.
    static func isReplaced(_ settings: DBusValue, byJoinTo ssid: [UInt8]) -> Bool {
        let data = settings.dictionaryEntries?.first { $0.key.string == "user" }?.value.variantDictionary?["data"]
        return Self.ssid(of: settings) == ssid && (data?.dictionaryEntries?.contains { $0.key.string == markKey } ?? false)
    }

    /// The networks NetworkManager's access points (their properties) make: hidden ones left
    /// out, each SSID once at its strongest, the signal in dBm from NetworkManager's percent.
    static func networks(from accessPoints: [[String: DBusValue]]) -> [Improv.Network] {
        var strongest: [[UInt8]: Improv.Network] = [:]
        for properties in accessPoints {
            guard let ssid = properties["Ssid"]?.bytes, !ssid.isEmpty, let strength = properties["Strength"]?.byte else { continue }
            let network = Improv.Network(ssid: ssid, rssi: rssi(strength: strength), security: security(properties))
            if strongest[ssid].map({ $0.rssi < network.rssi }) ?? true { strongest[ssid] = network }
        }
        return strongest.values.sorted { $0.rssi != $1.rssi ? $0.rssi > $1.rssi : $0.ssid.lexicographicallyPrecedes($1.ssid) }
    }

    /// dBm from NetworkManager's signal quality, inverting its mapping of -100…-40 dBm to
    /// 0…100 %.
    static func rssi(strength: UInt8) -> Int {
        Int(min(strength, 100)) * 60 / 100 - 100
    }

    /// How an access point is secured: RSN (WPA2 or newer), WPA, privacy alone (WEP), none.
    static func security(_ properties: [String: DBusValue]) -> Improv.Network.Security {
        if (properties["RsnFlags"]?.uint32 ?? 0) != 0 { return .wpa2 }
        if (properties["WpaFlags"]?.uint32 ?? 0) != 0 { return .wpa }
        if ((properties["Flags"]?.uint32 ?? 0) & 0x1) != 0 { return .wep }
        return .open
    }

    /// The first address in an IP config's `AddressData`.
    static func address(from data: DBusValue) -> String? {
        data.arrayElements?.lazy.compactMap { $0.variantDictionary?["address"]?.string }.first
    }

    /// NetworkManager's reason for a device's failure, in words.
    static func reasonText(_ reason: UInt32) -> String {
        switch reason {
        case 7: "it needed a password it did not get (a wrong password?)"
        case 8, 9, 10: "the access point refused it (a wrong password?)"
        case 11: "authentication took too long (a wrong password?)"
        case 5, 15, 16, 17: "no address (DHCP)"
        case 53: "no network of that name in range"
        default: "NetworkManager's reason \(reason)"
        }
    }
}
