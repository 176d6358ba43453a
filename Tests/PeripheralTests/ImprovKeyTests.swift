import Peripheral
import Testing

/// The key a join stores instead of a Wi-Fi passphrase, against IEEE 802.11i's published test
/// vectors (Annex H.4), which `wpa_passphrase` prints too.
@Suite("WPA's key from Improv's credentials")
struct ImprovKeyTests {
    static func key(_ ssid: String, _ password: String) throws -> String? {
        let credentials = try #require(Improv.Credentials(ssid: Array(ssid.utf8), password: Array(password.utf8)))
        return try credentials.preSharedKey().map(Hex.encode)
    }

    @Test("a passphrase gives the key IEEE 802.11i derives from it with the SSID", arguments: [
        ("IEEE", "password", "f42c6fc52df0ebef9ebb4b90b38a5f902e83fe1b135a70e23aed762e9710a12e"),
        ("ThisIsASSID", "ThisIsAPassword", "0dc0d6eb90555ed6419756b9a15ec3e3209b63df707dd508d14581f8982721af"),
        (String(repeating: "Z", count: 32), String(repeating: "a", count: 32),
         "becb93866bb8c3832cb777c2f559807c8c59afcb6eae734885001300a981cc62"),
    ])
    func derivedFromPassphrase(ssid: String, password: String, expected: String) throws {
        let key = try Self.key(ssid, password)

        #expect(key == expected)
    }

    @Test("a passphrase that wpa_supplicant's file cannot hold in quotes gives its key, as wpa_passphrase prints it")
    func quoteAndHash() throws {
        let key = try Self.key("home", "7k\"Q#p2!xZ")

        #expect(key == "e18dc477de61dafbd67b1b26f4ce8ec01e64399c071af73ea10e579a5ab59c1e")
    }

    @Test("a key of 64 hex digits is its own key, whatever the SSID")
    func keyIsItself() throws {
        let given = "0DC0d6eb90555ed6419756b9a15ec3e3209b63df707dd508d14581f8982721af"

        let key = try Self.key("ThisIsASSID", given)

        #expect(key == given.lowercased())
    }

    @Test("an open network has no key")
    func openNetwork() throws {
        #expect(try Self.key("cafe", "") == nil)
    }
}
