import Peripheral
import Testing

/// The frames here were made by Home Assistant's own client, py-improv-ble-client 2.0.1
/// (`improv_ble_client.protocol`: `WiFiSettingsCmd(b"MyWirelessAP", b"mysecurepassword")
/// .as_bytes()`, `DeviceInfoRes(...)`, ...), so that a mistake cannot hide in both ends.
@Suite("Improv Wi-Fi frames")
struct ImprovTests {
    static func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex)! }

    @Test("Home Assistant's Wi-Fi settings frame (the spec's example) carries its SSID and password")
    func wifiSettings() {
        let frame = Self.bytes("011e0c4d79576972656c6573734150106d7973656375726570617373776f7264c0")

        let command = Improv.command(from: frame)

        #expect(command == .success(.wifi(Improv.Credentials(ssid: Array("MyWirelessAP".utf8), password: Array("mysecurepassword".utf8))!)))
    }

    @Test("an open network comes with an empty password")
    func openNetwork() {
        let command = Improv.command(from: Self.bytes("01060443616665007a"))

        #expect(command == .success(.wifi(Improv.Credentials(ssid: Array("Cafe".utf8), password: [])!)))
    }

    /// A Wi-Fi settings frame as a client makes one: SSID and password, each behind its length.
    static func wifiFrame(ssid: [UInt8], password: [UInt8]) -> [UInt8] {
        let data = [UInt8(ssid.count)] + ssid + [UInt8(password.count)] + password
        let head = [0x01, UInt8(data.count)] + data
        return head + [UInt8(truncatingIfNeeded: head.reduce(0) { $0 + Int($1) })]
    }

    @Test(
        "a password no WPA network takes is refused as unable to connect, before any join",
        arguments: [
            Array("x\"\rremove_network 0\rsave_config ".utf8), Array("hunter22\nterminate".utf8), Array("hunter".utf8) + [0] + Array("22".utf8),
            Array(repeating: UInt8(ascii: "a"), count: 200), Array("hunter2".utf8), Array("pässwörd".utf8), Array(repeating: UInt8(ascii: "z"), count: 64),
        ])
    func passwordRefused(password: [UInt8]) {
        let frame = Self.wifiFrame(ssid: Array("Home".utf8), password: password)

        #expect(Improv.command(from: frame) == .failure(.unableToConnect))
    }

    @Test(
        "a WPA passphrase of 8 to 63 printable characters, quotes and spaces among them, or a key of 64 hex digits is taken as sent",
        arguments: ["hunter22", "x\" select_network 0 \"", String(repeating: "~", count: 63), String(repeating: "aF09", count: 16)])
    func passwordTaken(password: String) {
        let frame = Self.wifiFrame(ssid: Array("Home".utf8), password: Array(password.utf8))

        guard case .success(.wifi(let credentials)) = Improv.command(from: frame) else {
            Issue.record("not taken: \(Improv.command(from: frame))")
            return
        }

        #expect(credentials.password == Array(password.utf8))
    }

    @Test("the reason credentials are refused says the rule and the length, never the password")
    func refusalReason() {
        let reason = Improv.Credentials.refusal(ssid: Array("Home".utf8), password: Array("secret\r1".utf8))

        #expect(reason == "a WPA password is 8 to 63 printable ASCII characters or 64 hex digits, not 8 bytes with some not printable ASCII")
    }

    @Test("Home Assistant's commands without data are the commands they name", arguments: [
        ("020002", Improv.Command.identify), ("030003", .deviceInfo), ("040004", .scan), ("050005", .hostname(nil)),
    ])
    func commandsWithoutData(hex: String, expected: Improv.Command) {
        #expect(Improv.command(from: Self.bytes(hex)) == .success(expected))
    }

    @Test("a hostname to set comes as its one string")
    func hostnameToSet() {
        #expect(Improv.command(from: Self.bytes("050b0a6b69746368656e2d706906")) == .success(.hostname("kitchen-pi")))
    }

    @Test("a malformed frame is an invalid RPC", arguments: [
        "011e0c4d79576972656c6573734150106d7973656375726570617373776f7264c1",  // checksum off by one
        "011f0c4d79576972656c6573734150106d7973656375726570617373776f7264c1",  // length byte one too many
        "01030541428c",  // an SSID of 5 bytes with 2 in the frame (the checksum right)
        "02010306",  // identify with a byte of data
        "0102014145",  // Wi-Fi settings with one string
        "01",  // too short to be a frame
        "",
    ])
    func malformed(hex: String) {
        #expect(Improv.command(from: Self.bytes(hex)) == .failure(.invalidRPC))
    }

    @Test("an SSID longer than 32 bytes is an invalid RPC")
    func longSSID() {
        let data: [UInt8] = [33] + Array(repeating: 0x41, count: 33) + [0]
        let head: [UInt8] = [0x01, UInt8(data.count)] + data
        let frame = head + [UInt8(truncatingIfNeeded: head.reduce(0) { $0 + Int($1) })]

        #expect(Improv.command(from: frame) == .failure(.invalidRPC))
    }

    @Test("a well-formed frame of a command nobody defined is an unknown RPC")
    func unknownCommand() {
        #expect(Improv.command(from: [0x09, 0x00, 0x09]) == .failure(.unknownRPC))
    }

    @Test("a hostname that RFC 1123 does not allow is a bad hostname", arguments: ["bad_name", "-pi", "pi-", String(repeating: "a", count: 64)])
    func badHostname(name: String) {
        let data = [UInt8(name.utf8.count)] + Array(name.utf8)
        let head: [UInt8] = [0x05, UInt8(data.count)] + data
        let frame = head + [UInt8(truncatingIfNeeded: head.reduce(0) { $0 + Int($1) })]

        #expect(Improv.command(from: frame) == .failure(.badHostname))
    }

    @Test("results are the bytes Home Assistant's client makes of them", arguments: [
        (UInt8(0x01), ["http://192.168.4.2:8123"], "011817687474703a2f2f3139322e3136382e342e323a38313233bb"),
        (0x03, ["bleadvd", "0.9.0", "Raspberry Pi 4", "Kitchen"], "032507626c656164766405302e392e300e5261737062657272792050692034074b69746368656ebd"),
        (0x04, ["Home", "-52", "WPA2", "Cafe", "-70", "NO"], "041a04486f6d65032d353204575041320443616665032d3730024e4f09"),
        (0x04, [], "040004"),
    ])
    func results(id: UInt8, strings: [String], hex: String) {
        #expect(Improv.result(of: id, strings) == Self.bytes(hex))
    }

    @Test("a result that does not fit in one frame is refused")
    func resultTooLong() {
        let strings = Array(repeating: String(repeating: "x", count: 100), count: 3)

        #expect(Improv.result(of: 0x04, strings) == nil)
    }

    @Test("a scan's result names the networks strongest first, as Home Assistant's client makes it")
    func scanResult() {
        let networks = [
            Improv.Network(ssid: Array("Cafe".utf8), rssi: -70, security: .open),
            Improv.Network(ssid: Array("Home".utf8), rssi: -52, security: .wpa2),
        ]

        #expect(Improv.scanResult(networks) == Self.bytes("041a04486f6d65032d353204575041320443616665032d3730024e4f09"))
    }

    @Test("a scan's result keeps the strongest networks that fit in one frame")
    func scanResultFull() throws {
        let networks = (0..<40).map { Improv.Network(ssid: Array("network-\($0)".utf8), rssi: -40 - $0, security: .wpa2) }

        let frame = Improv.scanResult(networks)
        let kept = (0..<40).filter { n in frame.count > 2 && String(decoding: frame, as: UTF8.self).contains("network-\(n)\u{3}") }

        #expect(frame.count <= 258)
        #expect(kept == Array(0..<kept.count))
        #expect(kept.count == 13)  // 10 entries of 19 bytes, 3 of 20: 250; a 14th would make 270
    }

    @Test("the service data is the state, the capabilities and four zeros")
    func serviceData() {
        let data = Improv.serviceData(state: .authorized, capabilities: [.identify, .deviceInfo, .scan])

        #expect(data == [0x02, 0x07, 0, 0, 0, 0])
    }

    @Test("the UUIDs are the spec's")
    func uuids() throws {
        #expect(Improv.serviceUUID == (try BluetoothUUID("00467768-6228-2272-4663-277478268000")))
        #expect(Improv.resultUUID == (try BluetoothUUID("00467768-6228-2272-4663-277478268004")))
        #expect(Improv.serviceDataUUID == (try BluetoothUUID("00004677-0000-1000-8000-00805f9b34fb")))
    }

    @Test("credentials shown never show the password")
    func credentialsShown() {
        let credentials = Improv.Credentials(ssid: Array("Home".utf8), password: Array("hunter22".utf8))!

        #expect(!credentials.description.contains("hunter22"))
        #expect(credentials.description.contains("\"Home\""))
    }

    @Test("a frame written in two pieces is joined")
    func assemblesPieces() {
        var assembler = Improv.Assembler()
        let frame = Self.bytes("011e0c4d79576972656c6573734150106d7973656375726570617373776f7264c0")

        let first = assembler.add(Array(frame[..<20]))
        let second = assembler.add(Array(frame[20...]))

        #expect(first == .incomplete)
        #expect(second == .frame(frame))
        #expect(assembler.pending.isEmpty)
    }

    @Test("bytes beyond the frame's length are an overrun, and the assembler starts over")
    func overrun() {
        var assembler = Improv.Assembler()

        let piece = assembler.add([0x02, 0x00, 0x02, 0xFF])

        #expect(piece == .overrun)
        #expect(assembler.pending.isEmpty)
    }
}
