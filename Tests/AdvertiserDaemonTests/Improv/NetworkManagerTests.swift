@testable import AdvertiserDaemon
import DBus
import Peripheral
import Testing

@Suite("What bleadvd asks of NetworkManager and makes of its answers")
struct NetworkManagerTests {
    static func credentials(_ ssid: String, _ password: String) -> Improv.Credentials {
        Improv.Credentials(ssid: Array(ssid.utf8), password: Array(password.utf8))!
    }

    /// The settings as section → key → value.
    static func sections(_ value: DBusValue) -> [String: [String: DBusValue]] {
        var result: [String: [String: DBusValue]] = [:]
        for entry in value.dictionaryEntries ?? [] {
            if let name = entry.key.string { result[name] = entry.value.variantDictionary }
        }
        return result
    }

    @Test("a network with a password is WPA personal, its SSID as bytes, its password the PSK")
    func settingsWithPassword() throws {
        let settings = NetworkManager.settings(for: Self.credentials("Home", "hunter22"))

        let sections = Self.sections(settings)
        #expect(settings.type == .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)))
        #expect(sections["connection"]?["type"]?.string == "802-11-wireless")
        #expect(sections["connection"]?["id"]?.string == "Home")
        #expect(sections["802-11-wireless"]?["ssid"]?.bytes == Array("Home".utf8))
        #expect(sections["802-11-wireless"]?["mode"]?.string == "infrastructure")
        #expect(sections["802-11-wireless-security"]?["key-mgmt"]?.string == "wpa-psk")
        #expect(sections["802-11-wireless-security"]?["psk"]?.string == "hunter22")
    }

    @Test("an empty password is an open network: no security section")
    func settingsOpen() throws {
        let sections = Self.sections(NetworkManager.settings(for: Self.credentials("Cafe", "")))

        #expect(sections.keys.sorted() == ["802-11-wireless", "connection", "user"])
    }

    @Test("the connection a join adds carries bleadvd's mark in its user data")
    func settingsMarked() throws {
        let sections = Self.sections(NetworkManager.settings(for: Self.credentials("Home", "hunter22")))

        let data = sections["user"]?["data"]
        #expect(data?.type == .dictionary(key: .string, value: .string))
        #expect(data?.dictionaryEntries?.map { $0.key.string } == [NetworkManager.markKey])
    }

    /// A saved connection as GetSettings gives it: Wi-Fi to `ssid`, with `userData` (none: no
    /// `user` section).
    static func saved(_ ssid: String, userData: [String: String]? = nil) -> DBusValue {
        var sections = [
            DBusDictEntry(.string("connection"), .variantDictionary(["type": .string("802-11-wireless"), "id": .string(ssid)])),
            DBusDictEntry(.string("802-11-wireless"), .variantDictionary(["ssid": .bytes(Array(ssid.utf8))])),
        ]
        if let userData {
            let data = DBusValue.dictionary(key: .string, value: .string, userData.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .string($0.value)) })
            sections.append(DBusDictEntry(.string("user"), .variantDictionary(["data": data])))
        }
        return .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), sections)
    }

    @Test("a join replaces only connections bleadvd added to the same network: not an admin's to it, nor another program's user data, nor bleadvd's to another", arguments: [
        (saved("Home", userData: [NetworkManager.markKey: "improv"]), true),
        (saved("Home"), false),
        (saved("Home", userData: ["org.example.tool": "x"]), false),
        (saved("Office", userData: [NetworkManager.markKey: "improv"]), false),
    ])
    func replaced(settings: DBusValue, replaced: Bool) {
        #expect(NetworkManager.isReplaced(settings, byJoinTo: Array("Home".utf8)) == replaced)
    }

    @Test("the connection a join adds is one a later join to the same network replaces")
    func addedIsReplaced() throws {
        let added = NetworkManager.settings(for: Self.credentials("Home", "hunter22"))

        #expect(NetworkManager.isReplaced(added, byJoinTo: Array("Home".utf8)))
    }

    static func accessPoint(_ ssid: String, strength: UInt8, flags: UInt32 = 0, wpa: UInt32 = 0, rsn: UInt32 = 0) -> [String: DBusValue] {
        ["Ssid": .bytes(Array(ssid.utf8)), "Strength": .byte(strength), "Flags": .uint32(flags), "WpaFlags": .uint32(wpa), "RsnFlags": .uint32(rsn)]
    }

    @Test("a saved connection's SSID is read from its Wi-Fi settings; one that is not Wi-Fi has none")
    func ssidOfSettings() throws {
        let wifi = NetworkManager.settings(for: Self.credentials("Home", "hunter22"))
        let wired = DBusValue.dictionary(key: .string, value: .dictionary(key: .string, value: .variant), [
            DBusDictEntry(.string("connection"), .variantDictionary(["type": .string("802-3-ethernet")])),
        ])

        #expect(NetworkManager.ssid(of: wifi) == Array("Home".utf8))
        #expect(NetworkManager.ssid(of: wired) == nil)
    }

    @Test("access points become networks: hidden ones left out, each SSID once at its strongest, strongest first")
    func networks() {
        let accessPoints = [
            Self.accessPoint("Home", strength: 50, rsn: 0x188),
            Self.accessPoint("Cafe", strength: 80),
            Self.accessPoint("Home", strength: 100, rsn: 0x188),
            Self.accessPoint("", strength: 90, rsn: 0x188),
        ]

        let networks = NetworkManager.networks(from: accessPoints)

        #expect(networks == [
            Improv.Network(ssid: Array("Home".utf8), rssi: -40, security: .wpa2),
            Improv.Network(ssid: Array("Cafe".utf8), rssi: -52, security: .open),
        ])
    }

    @Test("security is RSN as WPA2, WPA as WPA, privacy alone as WEP, nothing as open", arguments: [
        (Self.accessPoint("a", strength: 1, flags: 1, wpa: 0, rsn: 0x188), Improv.Network.Security.wpa2),
        (Self.accessPoint("a", strength: 1, flags: 1, wpa: 0x88, rsn: 0), .wpa),
        (Self.accessPoint("a", strength: 1, flags: 1), .wep),
        (Self.accessPoint("a", strength: 1), .open),
    ])
    func security(accessPoint: [String: DBusValue], expected: Improv.Network.Security) {
        #expect(NetworkManager.security(accessPoint) == expected)
    }

    @Test("NetworkManager's signal percent maps back to dBm over -100 to -40", arguments: [
        (UInt8(0), -100), (50, -70), (100, -40), (255, -40),
    ])
    func rssi(strength: UInt8, dBm: Int) {
        #expect(NetworkManager.rssi(strength: strength) == dBm)
    }

    @Test("the address is the first of the IP config's address data")
    func address() {
        let data = DBusValue.array(.dictionary(key: .string, value: .variant), [
            .variantDictionary(["address": .string("192.168.4.23"), "prefix": .uint32(24)]),
            .variantDictionary(["address": .string("10.0.0.2"), "prefix": .uint32(8)]),
        ])

        #expect(NetworkManager.address(from: data) == "192.168.4.23")
        #expect(NetworkManager.address(from: .array(.dictionary(key: .string, value: .variant), [])) == nil)
    }

    @Test("a wrong password's reasons say so; a missing network says so; others give the number", arguments: [
        (UInt32(7), "it needed a password it did not get (a wrong password?)"),
        (53, "no network of that name in range"),
        (999, "NetworkManager's reason 999"),
    ])
    func reasons(reason: UInt32, text: String) {
        #expect(NetworkManager.reasonText(reason) == text)
    }
}
