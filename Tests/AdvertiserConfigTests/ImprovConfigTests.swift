import AdvertiserConfig
import Peripheral
import Testing

@Suite("The [improv] table")
struct ImprovConfigTests: ReadsConfigText {
    @Test("without the table, Improv is not offered")
    func absent() throws {
        #expect(try parse("").improv == nil)
    }

    static let minimal = "[improv]\n"

    @Test("an empty table offers Improv with authorization by bleadvctl for 60 s, NetworkManager joining")
    func defaults() throws {
        let improv = try #require(try parse(Self.minimal).improv)

        #expect(improv.needsAuthorization)
        #expect(improv.authorization == .seconds(60))
        #expect(improv.joiner == .networkManager)
        #expect(improv.identify == nil)
        #expect(improv.redirectURL == nil)
    }

    @Test("with NetworkManager joining, the networks in range are offered (scan)")
    func networkManagerScans() throws {
        let improv = try #require(try parse("[improv]\njoin = \"networkmanager\"\n").improv)

        #expect(improv.joiner == .networkManager)
        #expect(improv.capabilities == [.deviceInfo, .scan])
    }

    @Test("with a join program, scan is not offered")
    func programDoesNotScan() throws {
        let improv = try #require(try parse("[improv]\njoin = \"/usr/local/libexec/join-wifi\"\n").improv)

        #expect(improv.joiner == .program("/usr/local/libexec/join-wifi"))
        #expect(improv.capabilities == [.deviceInfo])
    }

    @Test("every key is read as given")
    func everyKey() throws {
        let text = """
            [improv]
            authorization = "none"
            authorization_seconds = 120
            device_name = "Kitchen"
            hardware = "Raspberry Pi 4"
            redirect_url = "http://{address}:8123/"
            identify = ["/usr/local/bin/blink", "3"]
            join = "/usr/local/libexec/join-wifi"

            """

        let improv = try #require(try parse(text).improv)

        #expect(!improv.needsAuthorization)
        #expect(improv.authorization == .seconds(120))
        #expect(improv.deviceName == "Kitchen")
        #expect(improv.hardware == "Raspberry Pi 4")
        #expect(improv.redirectURL == "http://{address}:8123/")
        #expect(improv.identify == ["/usr/local/bin/blink", "3"])
        #expect(improv.joiner == .program("/usr/local/libexec/join-wifi"))
    }

    @Test("a join that is neither networkmanager nor an absolute path is refused")
    func joinRelative() {
        #expect(error("[improv]\njoin = \"join-wifi\"\n") == "test.toml:2: improv.join: must be networkmanager or an absolute path to a program (given the SSID in IMPROV_SSID and the password on its standard input)")
    }

    @Test("what the table cannot say is refused, naming the key", arguments: [
        ("authorization = \"button\"", "test.toml:2: improv.authorization: \"button\" is not an authorization; use bleadvctl (a person runs bleadvctl improv authorize) or none"),
        ("authorization_seconds = 4", "test.toml:2: improv.authorization_seconds: is 4; it must be between 5 and 3600"),
        ("device_name = \"\"", "test.toml:2: improv.device_name: must be 1 to 64 bytes long"),
        ("redirect_url = \"ftp://x\"", "test.toml:2: improv.redirect_url: must be an http:// or https:// URL of at most 200 bytes (e.g. \"http://{address}:8123/\")"),
        ("redirect_url = \"http://a\\u001b[31m\"", "test.toml:2: improv.redirect_url: must be an http:// or https:// URL of at most 200 bytes (e.g. \"http://{address}:8123/\")"),
        ("identify = [\"blink\"]", "test.toml:2: improv.identify: must be a command as an array, starting with an absolute path (e.g. [\"/usr/local/bin/blink\", \"3\"])"),
        ("ssid = \"Home\"", "test.toml:2: improv.ssid: unknown key; known keys: authorization, authorization_seconds, device_name, hardware, identify, join, redirect_url"),
    ])
    func refused(line: String, message: String) {
        #expect(error(Self.minimal + line + "\n") == message)
    }

    @Test("an advertisement of the file cannot take the name the [improv] table's takes")
    func advertisementNameTaken() {
        let text = Self.minimal + "\n[advertisement.improv]\nlocal_name = \"x\"\n"

        #expect(error(text) == "test.toml:3: advertisement.improv: the [improv] table's advertisement is named improv; give this one another name")
    }

    @Test("the advertisement is the flags, the service's UUID and its service data: 31 bytes, the name in the scan response")
    func advertisement() throws {
        let improv = try #require(try parse(Self.minimal).improv)

        let ad = improv.advertisement(state: .authorizationRequired).advertisement
        let payload = AdvertisingPayload(for: ad, adapterName: "kitchen")

        try ad.validate()
        #expect(payload.advertisingBytes == [0x11, 0x07]
            + [0x00, 0x80, 0x26, 0x78, 0x74, 0x27, 0x63, 0x46, 0x72, 0x22, 0x28, 0x62, 0x68, 0x77, 0x46, 0x00]
            + [0x09, 0x16, 0x77, 0x46, 0x01, 0x06, 0x00, 0x00, 0x00, 0x00] + [0x02, 0x01, 0x06])
        #expect(payload.scanResponseBytes == [0x08, 0x09] + Array("kitchen".utf8))
    }

    @Test("device info is always offered, identify when a command is configured", arguments: [
        ("", [.deviceInfo, .scan] as Improv.Capabilities), ("identify = [\"/bin/true\"]\n", [.identify, .deviceInfo, .scan] as Improv.Capabilities),
    ] as [(String, Improv.Capabilities)])
    func capabilities(line: String, expected: Improv.Capabilities) throws {
        #expect(try parse(Self.minimal + line).improv?.capabilities == expected)
    }

    @Test("the service has the spec's five characteristics, and what a client writes is a secret")
    func service() throws {
        let improv = try #require(try parse(Self.minimal).improv)

        let service = improv.service(state: .authorized, error: .none)

        #expect(service.service.uuid == Improv.serviceUUID)
        #expect(service.service.characteristics.map(\.uuid) == [Improv.stateUUID, Improv.errorUUID, Improv.commandUUID, Improv.resultUUID, Improv.capabilitiesUUID])
        #expect(service.service.characteristics.allSatisfy { $0.security == .none })
        #expect(service.isSecret("command"))
        #expect(service.service.characteristics[0].value == [0x02])
    }
}
