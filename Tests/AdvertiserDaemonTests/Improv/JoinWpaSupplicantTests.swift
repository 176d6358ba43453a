@testable import AdvertiserDaemon
import Foundation
import Peripheral
import Testing

/// `join-wpa-supplicant`, the package's join program for a box whose Wi-Fi wpa_supplicant
/// manages, run as bleadvd runs a join program (the SSID in `IMPROV_SSID_HEX`, the password on
/// standard input) against a stand-in of wpa_supplicant 2.10's control socket: a real datagram
/// socket that records each request it gets and answers as wpa_supplicant does. Scenario 67
/// runs the program against the real wpa_supplicant, in bleadvd's sandbox.
@Suite("The join program for wpa_supplicant")
struct JoinWpaSupplicantTests {
    /// wpa_supplicant's stand-in, on the socket `wlan0` of a folder beside a P2P device's. It
    /// holds networks 0 (one the program added before for "Home", with its mark, disabled), 2 (an
    /// admin's for "Home", no mark, enabled) and the new one, 1, once added. `joins` connects
    /// network 1 with an address; otherwise a failed handshake disables it.
    final class StandIn: @unchecked Sendable {
        let folder: String
        let joins: Bool
        private let lock = NSLock()
        private var received: [String] = []
        private var added = false
        private var stopped = false
        private var sockets: [Int32] = []
        private let done = DispatchSemaphore(value: 0)

        init(joins: Bool) throws {
            self.joins = joins
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("join-wpa-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for name in ["p2p-dev-wlan0", "wlan0"] {
                let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
                sockets.append(descriptor)
                var address = Self.address("\(folder)/\(name)")
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
                guard bound == 0 else { throw CocoaError(.fileWriteUnknown) }
            }
            let server = sockets[1]
            Thread.detachNewThread { [self] in
                serve(server)
                done.signal()
            }
        }

        /// Every request, in order, as received.
        var requests: [String] { lock.withLock { received } }

        func stop() {
            lock.withLock { stopped = true }
            done.wait()
            sockets.forEach { close($0) }
            try? FileManager.default.removeItem(atPath: folder)
        }

        private func serve(_ server: Int32) {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !lock.withLock({ stopped }) {
                var ready = pollfd(fd: server, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 50) > 0 else { continue }
                var from = sockaddr_un()
                var length = socklen_t(MemoryLayout<sockaddr_un>.size)
                let count = withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(server, &buffer, buffer.count, 0, $0, &length) }
                }
                guard count >= 0 else { continue }
                let request = String(decoding: buffer[..<count], as: UTF8.self)
                var reply = Array(answer(request).utf8)
                _ = withUnsafePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(server, &reply, reply.count, 0, $0, length) }
                }
            }
        }

        private func answer(_ request: String) -> String {
            lock.withLock {
                received.append(request)
                let words = request.split(separator: " ").map(String.init)
                switch words.first {
                case "ADD_NETWORK":
                    added = true
                    return "1\n"
                case "GET_NETWORK" where words.count == 3:
                    switch words[2] {
                    case "ssid": return "\"Home\"\n"
                    case "id_str": return words[1] == "2" ? "FAIL\n" : "\"bleadvd-improv\"\n"
                    default: return "FAIL\n"
                    }
                case "STATUS":
                    return joins ? "bssid=02:00:00:00:00:00\nid=1\nwpa_state=COMPLETED\nip_address=192.168.4.2\n" : "wpa_state=SCANNING\n"
                case "LIST_NETWORKS":
                    let new = added ? "1\tHome\tany\t\(joins ? "[CURRENT]" : "[TEMP-DISABLED]")\n" : ""
                    return "network id / ssid / bssid / flags\n0\tHome\tany\t[DISABLED]\n2\tHome\tany\t\n" + new
                default:
                    return "OK\n"
                }
            }
        }

        static func address(_ path: String) -> sockaddr_un {
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            return address
        }
    }

    /// The program's run with `password` on its standard input, SSID "Home", against a stand-in
    /// that `joins` or not: its exit status, the lines it wrote, and the requests wpa_supplicant got.
    func join(password: [UInt8], joins: Bool = true, ssidHex: String = "486f6d65") throws -> (status: Int32, lines: [String], requests: [String]) {
        let standIn = try StandIn(joins: joins)
        defer { standIn.stop() }
        var lines: [String] = []
        var pauses = 0

        let status = JoinWPASupplicantProgram.run(
            arguments: [], environment: ["IMPROV_SSID_HEX": ssidHex, "BLEADVD_WPA_CTRL": standIn.folder, "RUNTIME_DIRECTORY": standIn.folder],
            input: password, say: { lines.append($0) }, pause: { pauses += 1 })

        return (status, lines, standIn.requests)
    }

    func join(_ password: String, joins: Bool = true) throws -> (status: Int32, lines: [String], requests: [String]) {
        try join(password: Array(password.utf8), joins: joins)
    }

    @Test("joined through the interface's socket, not its P2P device's, it prints the address wpa_supplicant reports as its first line and exits 0")
    func joinedPrintsAddress() throws {
        let (status, lines, _) = try join("hunter22")

        #expect(status == 0, "\(lines)")
        #expect(lines.first == "192.168.4.2")
    }

    @Test("a passphrase reaches wpa_supplicant only as the key WPA derives from it with the SSID, 64 hex digits in one request")
    func passphraseAsKey() throws {
        // wpa_passphrase Home 'correct horse "battery"' prints this key.
        let key = "be58df1ae099ebec9cc00c105a7fce961d02c5b787b4c94898cfe7ba8854b16d"

        let (_, _, requests) = try join("correct horse \"battery\"\n")

        #expect(requests.filter { $0.contains(" psk ") } == ["SET_NETWORK 1 psk \(key)"], "\(requests)")
        #expect(!requests.contains { $0.contains("battery") }, "\(requests)")
    }

    @Test("a passphrase with a quote and a \"#\", which wpa_supplicant's file would cut, is set as its key like any other")
    func quoteAndHashAsKey() throws {
        let (status, _, requests) = try join("7k\"Q#p2!xZ")

        #expect(status == 0)
        #expect(requests.contains("SET_NETWORK 1 psk 45b649d7a9cd115fd0c49286bc53af1418c27ee26fd81d41d3d2f1b0cceb07a6"), "\(requests)")
    }

    @Test("an SSID of printable characters with a quote and a \"#\", which wpa_supplicant's file cannot hold, is refused before any network is added")
    func unsavableSSIDRefused() throws {
        let (status, lines, requests) = try join(password: Array("hunter22".utf8), ssidHex: Hex.encode(Array("a\"b#c".utf8)))

        #expect(status == 1)
        #expect(lines.first?.contains("which wpa_supplicant's config file cannot hold") == true, "\(lines)")
        #expect(!requests.contains("ADD_NETWORK"), "\(requests)")
    }

    @Test("an SSID with a quote and a \"#\" and a byte wpa_supplicant saves in hex is joined")
    func hexSavedSSIDJoined() throws {
        let (status, lines, _) = try join(password: Array("hunter22".utf8), ssidHex: Hex.encode(Array("a\"b#c".utf8) + [0xC3, 0xA9]))

        #expect(status == 0, "\(lines)")
    }

    @Test(
        "a password that would be wpa_supplicant commands for a line editor, or none WPA takes, is refused before wpa_supplicant is asked anything",
        arguments: [
            Array("x\"\rremove_network 0\rsave_config ".utf8), Array("hunter22\nremove_network 0".utf8), Array("hunter".utf8) + [0] + Array("22".utf8),
            Array(repeating: UInt8(ascii: "a"), count: 200), Array("x\"\u{1B}[Aterminate".utf8),
        ])
    func injectionRefused(password: [UInt8]) throws {
        let (status, lines, requests) = try join(password: password)

        #expect(status == 2)
        #expect(lines.first?.hasPrefix("a WPA password is 8 to 63 printable ASCII characters") == true, "\(lines)")
        #expect(requests.isEmpty, "\(requests)")
    }

    @Test("an SSID that is not 1 to 32 bytes is refused before wpa_supplicant is asked anything")
    func longSSIDRefused() throws {
        let (status, lines, requests) = try join(password: Array("hunter22".utf8), ssidHex: String(repeating: "41", count: 33))

        #expect(status == 2)
        #expect(lines == ["an SSID is 1 to 32 bytes, not 33"])
        #expect(requests.isEmpty)
    }

    @Test("a key of 64 hex digits is set as the key, without quotes")
    func hexKey() throws {
        let key = String(repeating: "0123456789abcdef", count: 4)

        let (_, _, requests) = try join(key)

        #expect(requests.contains("SET_NETWORK 1 psk \(key)"), "\(requests)")
    }

    @Test("the network gets the SSID as hex and bleadvd's mark")
    func networkMarked() throws {
        let (_, _, requests) = try join("hunter22")

        #expect(requests.contains("SET_NETWORK 1 ssid 486f6d65"))
        #expect(requests.contains("SET_NETWORK 1 id_str \"bleadvd-improv\""))
    }

    @Test("joined, the networks it added before for the same SSID are removed, an admin's kept, and the config saved")
    func joinedReplacesOwnNetworks() throws {
        let (_, _, requests) = try join("hunter22")

        #expect(requests.contains("REMOVE_NETWORK 0"))
        #expect(!requests.contains("REMOVE_NETWORK 2"))
        #expect(!requests.contains("REMOVE_NETWORK 1"))
        #expect(requests.last == "SAVE_CONFIG")
    }

    @Test("the new network is selected, so that it is tried even while the box is on another one")
    func networkSelected() throws {
        let (_, _, requests) = try join("hunter22")

        #expect(requests.contains("SELECT_NETWORK 1"))
        #expect(!requests.contains("ENABLE_NETWORK 1"))
    }

    @Test("joined, the networks enabled before (the admin's) are enabled again after the selection, and no disabled one is")
    func joinedRestoresEnabled() throws {
        let (_, _, requests) = try join("hunter22")

        #expect(requests.filter { $0.hasPrefix("ENABLE_NETWORK") } == ["ENABLE_NETWORK 2"], "\(requests)")
        #expect(requests.firstIndex(of: "ENABLE_NETWORK 2")! > requests.firstIndex(of: "SELECT_NETWORK 1")!)
    }

    @Test("not joined, the networks enabled before are enabled again, and none that was there is removed")
    func failedRestoresEnabled() throws {
        let (_, _, requests) = try join("wrong-password", joins: false)

        #expect(requests.filter { $0.hasPrefix("ENABLE_NETWORK") } == ["ENABLE_NETWORK 2"], "\(requests)")
        #expect(requests.filter { $0.hasPrefix("REMOVE_NETWORK") } == ["REMOVE_NETWORK 1"], "\(requests)")
    }

    @Test("a failed handshake (wpa_supplicant disables the network) exits 1 saying a wrong password")
    func wrongKey() throws {
        let (status, lines, _) = try join("wrong-password", joins: false)

        #expect(status == 1)
        #expect(lines == ["wpa_supplicant's handshake with 486f6d65 (hex) failed: a wrong password?"])
    }

    @Test("an empty password is an open network: no password is set")
    func openNetwork() throws {
        let (_, _, requests) = try join("")

        #expect(requests.contains("SET_NETWORK 1 key_mgmt NONE"))
        #expect(!requests.contains { $0.contains(" psk ") })
    }

    @Test("without a control socket it may open, it says what wpa_supplicant's config and bleadvd's unit need, and exits 1")
    func noSocket() {
        var lines: [String] = []

        let status = JoinWPASupplicantProgram.run(
            arguments: [], environment: ["IMPROV_SSID_HEX": "486f6d65", "BLEADVD_WPA_CTRL": "/nonexistent"], input: [],
            say: { lines.append($0) }, pause: {})

        #expect(status == 1)
        #expect(lines.first?.contains("no wpa_supplicant control socket in /nonexistent") == true, "\(lines)")
        #expect(lines.first?.contains("GROUP=netdev") == true)
    }

    @Test("run with arguments it prints its usage; with --help it exits 0, otherwise 2")
    func usage() {
        var lines: [String] = []

        let help = JoinWPASupplicantProgram.run(arguments: ["--help"], environment: [:], input: [], say: { lines.append($0) }, pause: {})
        let other = JoinWPASupplicantProgram.run(arguments: ["wlan0"], environment: [:], input: [], say: { _ in }, pause: {})

        #expect(help == 0)
        #expect(other == 2)
        #expect(lines.first?.hasPrefix("usage: IMPROV_SSID_HEX=HEX join-wpa-supplicant") == true)
    }
}
