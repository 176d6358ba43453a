import AdvertiserControl
import AdvertiserDaemon
import DBus
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// Improv Wi-Fi in the daemon, over the mock: a client's frames written to the command
/// characteristic, a real join program (a shell script) given the credentials, the state,
/// error and result the mock was told to notify, the advertisement's service data, and the
/// real `bleadvctl improv authorize`.
@Suite("Improv Wi-Fi in the daemon", .timeLimit(.minutes(3)))
struct ImprovDaemonTests {
    static let app = RegistrationID("/org/bleadvd/gatt/app1")
    static let command = GATTCharacteristicID(service: "improv", characteristic: "command")
    static let state = GATTCharacteristicID(service: "improv", characteristic: "state")
    static let error = GATTCharacteristicID(service: "improv", characteristic: "error")
    static let result = GATTCharacteristicID(service: "improv", characteristic: "result")

    /// Wi-Fi settings for "Home" / "hunter22", as Home Assistant's client frames them.
    static let wifi: [UInt8] = {
        let data: [UInt8] = [4] + Array("Home".utf8) + [8] + Array("hunter22".utf8)
        let head: [UInt8] = [0x01, UInt8(data.count)] + data
        return head + [UInt8(truncatingIfNeeded: head.reduce(0) { $0 + Int($1) })]
    }()

    /// A join program that keeps what it was given in `folder` and exits `status`, printing
    /// the address it "got".
    static func joinProgram(in folder: URL, status: Int) throws -> String {
        let path = folder.appendingPathComponent("join-wifi").path
        try writeExecutable("""
            #!/bin/sh
            printf '%s' "$IMPROV_SSID" > '\(folder.path)/ssid'
            echo run >> '\(folder.path)/runs'
            cat > '\(folder.path)/password'
            echo 192.168.4.2
            exit \(status)

            """, to: path)
        return path
    }

    /// A daemon offering Improv, joining by a join program exiting `status` (or by
    /// NetworkManager, which the private bus does not have; or by the program `program`
    /// writes into the bus's folder).
    func session(
        onDBus: Bool = false, authorization: String = "none", status: Int = 0, networkManager: Bool = false, program: ((URL) throws -> String)? = nil,
        joiner: (any NetworkJoining)? = nil
    ) async throws -> DaemonSession {
        let folder = try ScratchFolder("improv")
        let program = try program?(folder.url) ?? Self.joinProgram(in: folder.url, status: status)
        let identify = folder.url.appendingPathComponent("identify").path
        try writeExecutable("#!/bin/sh\necho run >> '\(folder.url.path)/identified'\nsleep 1\n", to: identify)
        let config = """
            [improv]
            join = "\(networkManager ? "networkmanager" : program)"
            identify = ["\(identify)"]
            authorization = "\(authorization)"
            device_name = "kitchen"
            hardware = "Raspberry Pi 4"
            redirect_url = "http://{address}:8123/"
            """
        return try await DaemonSession(onDBus: onDBus, config: config, folder: folder, joiner: joiner) { mock in
            mock.scriptRegisterApplication(.always(.success(Self.app)))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptUpdateValue(.always(.success(())))
            mock.scriptUpdate(.always(.success(())))
            mock.scriptReregister(.always(.success(false)))
            mock.scriptAgent()
        }
    }

    /// What the mock was told to notify for `characteristic`, in order.
    func notified(_ session: DaemonSession, _ characteristic: GATTCharacteristicID) -> [[UInt8]] {
        session.mock.calls.updatedValues.filter { $0.characteristic == characteristic }.map(\.value)
    }

    /// Advances the clock until `condition` holds (or the test's time limit cancels it): the
    /// join program is watched on it.
    func advance(_ session: DaemonSession, until condition: () -> Bool) async {
        while !condition(), !Task.isCancelled {
            await session.clock.waitForSleepers()
            session.clock.advance(by: .milliseconds(100))
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// `central` reads Improv's state, as a client does once connected.
    func reads(_ session: DaemonSession, _ central: String) {
        session.mock.emit(.gatt(GATTEvent(Self.state, .read, central: central)))
    }

    /// On the in-memory bus, the `ImprovAuthorize` call for `address` (empty: the one
    /// connected), once the daemon's Improv has seen `connected` read its state.
    func grant(_ session: DaemonSession, _ address: String = "", connected: [String]) async throws -> (seconds: Int, central: String) {
        for central in connected { reads(session, central) }
        try await settle(session)
        return try await session.serving((any ImprovControl).self).improvAuthorize(address)
    }

    /// `bleadvctl improv authorize [ADDRESS]`, once the daemon's Improv has seen `connected`
    /// read its state (BlueZ's events and the call take different ways in).
    func authorize(_ session: DaemonSession, _ address: String? = nil, connected: [String]) async throws -> ProgramResult {
        for central in connected { reads(session, central) }
        try await settle(session)
        return try await session.ctl(["improv", "authorize"] + (address.map { [$0] } ?? []))
    }

    /// Returns once Improv has taken every event emitted before: a passer-by's partial frame
    /// and the end of its link come after them, in order, and the journal says it dropped it.
    func settle(_ session: DaemonSession) async throws {
        let passerBy = "00:00:00:00:00:\(String(format: "%02X", session.mock.calls.updatedValues.count % 256))"
        let before = session.logs.all.count
        session.mock.emit(.gatt(GATTEvent(Self.command, .written([0x01, 0xFF], .bytes([0x01, 0xFF])), central: passerBy)))
        session.mock.emit(.disconnected(central: passerBy, adapter: "hci0"))
        try await eventually("Improv took the events before") {
            session.logs.all.dropFirst(before).contains { $0.contains("dropped \(passerBy)'s partial frame") }
        }
    }

    @Test("credentials reach the join program, and the device is provisioned with the redirect carrying the address it got")
    func provisioned() async throws {
        let session = try await session()

        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: "AA:BB:CC:DD:EE:FF")))
        await advance(session) { notified(session, Self.result).count == 1 }

        #expect(notified(session, Self.state) == [[0x03], [0x04]])
        #expect(notified(session, Self.result) == [Improv.result(of: 0x01, ["http://192.168.4.2:8123/"])!])
        #expect(try String(contentsOfFile: session.folder.appendingPathComponent("ssid").path, encoding: .utf8) == "Home")
        #expect(try String(contentsOfFile: session.folder.appendingPathComponent("password").path, encoding: .utf8) == "hunter22")
        #expect(session.mock.calls.updated.last?.advertisement.serviceData.first?.data.first == 0x04)
    }

    @Test("the password reaches no log line")
    func passwordNeverLogged() async throws {
        let session = try await session()

        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: "AA:BB:CC:DD:EE:FF")))
        await advance(session) { notified(session, Self.result).count == 1 }

        #expect(session.logs.all.contains { $0.contains("sent Wi-Fi settings for \"Home\"") })
        let leaks = session.logs.all.filter { $0.contains("hunter22") || $0.contains(Hex.encode(Array("hunter22".utf8))) }
        #expect(leaks.isEmpty, "\(leaks)")
    }

    @Test("a join program that fails leaves the device ready for credentials, with unable to connect")
    func joinFails() async throws {
        let session = try await session(status: 1)

        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: "AA:BB:CC:DD:EE:FF")))
        await advance(session) { notified(session, Self.error).last == [0x03] }

        #expect(notified(session, Self.state).last == [0x02])
        #expect(notified(session, Self.result).isEmpty)
        #expect(session.logs.all.contains { $0.contains("could not join \"Home\" (a password)") && $0.contains("exited 1") }, "\(session.logs.all.filter { $0.contains("improv") })")
    }

    @Test("before bleadvctl improv authorize, credentials get not authorized and nothing runs")
    func notAuthorized() async throws {
        let session = try await session(authorization: "bleadvctl")

        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: "AA:BB:CC:DD:EE:FF")))
        try await eventually("an error is notified", every: .milliseconds(1)) { !notified(session, Self.error).isEmpty }

        #expect(notified(session, Self.error) == [[0x04]])
        #expect(notified(session, Self.state) == [[0x01]])
        #expect(!FileManager.default.fileExists(atPath: session.folder.appendingPathComponent("password").path))
    }

    @Test("bleadvctl improv authorize lets the connected client in: the state turns authorized, and its credentials are joined")
    func authorized() async throws {
        let session = try await session(onDBus: true, authorization: "bleadvctl")

        let result = try await authorize(session, connected: ["AA:BB:CC:DD:EE:FF"])
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: "AA:BB:CC:DD:EE:FF")))
        await advance(session) { notified(session, Self.result).count == 1 }

        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output == "authorized AA:BB:CC:DD:EE:FF: it may send Wi-Fi credentials for the next 60 s\n")
        #expect(notified(session, Self.state) == [[0x02], [0x03], [0x04]])
    }

    @Test("a reload that changes [improv] during a join keeps that join the one: credentials sent after it start no second")
    func reloadDuringJoin() async throws {
        let session = try await session()
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: "AA:BB:CC:DD:EE:FF")))
        try await eventually("the state notified is provisioning", every: .milliseconds(1)) { notified(session, Self.state).last == [0x03] }
        let config = try String(contentsOfFile: session.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: "device_name = \"kitchen\"", with: "device_name = \"pantry\"")
            .write(toFile: session.configPath, atomically: true, encoding: .utf8)

        try await session.daemon.reload()
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: "11:22:33:44:55:66")))
        try await eventually("the error notified is unknown", every: .milliseconds(1)) { notified(session, Self.error).last == [0xFF] }
        await advance(session) { notified(session, Self.result).count == 1 }

        #expect(try String(contentsOfFile: session.folder.appendingPathComponent("runs").path, encoding: .utf8) == "run\n")
        #expect(notified(session, Self.state).last == [0x04])
    }

    /// An identify command frame.
    static let identify: [UInt8] = [0x02, 0x00, 0x02]

    @Test("a flood of identify frames while the identify program runs starts no second one, and notifies nothing more")
    func identifySingleFlight() async throws {
        let session = try await session()
        let notifiedBefore = session.mock.calls.updatedValues.count

        // The program's end is seen on the clock, which does not move meanwhile: it "runs".
        for _ in 1...200 {
            session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.identify, .bytes(Self.identify)), central: "AA:BB:CC:DD:EE:FF")))
        }
        // Events are handled in order: once another central's malformed frame is answered (its
        // error, then the state, each its own call), the 200 were.
        session.mock.emit(.gatt(GATTEvent(Self.command, .written([0x02, 0x00, 0x00], .bytes([0x02, 0x00, 0x00])), central: "11:22:33:44:55:66")))
        try await eventually("the malformed frame is answered: its error, then the state", every: .milliseconds(1)) {
            notified(session, Self.error).last == [0x01] && session.mock.calls.updatedValues.last?.characteristic == Self.state
        }
        // The program's shell creates the file before it writes the line: the line, not the file.
        let file = session.folder.appendingPathComponent("identified").path
        await advance(session) { (try? String(contentsOfFile: file, encoding: .utf8))?.isEmpty == false }

        #expect(try String(contentsOfFile: file, encoding: .utf8) == "run\n")
        // The first identify's error and state, the malformed frame's: nothing for the other 199.
        #expect(session.mock.calls.updatedValues.count - notifiedBefore == 4)
    }

    @Test("a flood of malformed frames from one central writes one journal line an interval, saying how many it stands for; each is still answered")
    func malformedFloodCoalesced() async throws {
        let session = try await session()

        for _ in 1...100 {
            session.mock.emit(.gatt(GATTEvent(Self.command, .written([0x02, 0x00, 0x00], .bytes([0x02, 0x00, 0x00])), central: "AA:BB:CC:DD:EE:FF")))
        }
        try await eventually("the 100 frames are answered", every: .milliseconds(1)) { notified(session, Self.error).count >= 100 }
        session.clock.advance(by: .milliseconds(100))
        session.mock.emit(.gatt(GATTEvent(Self.command, .written([0x02, 0x00, 0x00], .bytes([0x02, 0x00, 0x00])), central: "AA:BB:CC:DD:EE:FF")))
        try await eventually("the 101st frame is answered", every: .milliseconds(1)) { notified(session, Self.error).count >= 101 }

        let lines = session.logs.all.filter { $0.contains("improv: AA:BB:CC:DD:EE:FF: a malformed frame") }
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.last?.contains("(and 99 more frame(s) from it since its last line)") == true, "\(lines)")
    }

    @Test("an authorization where none is needed is refused")
    func authorizeNotNeeded() async throws {
        let session = try await session()

        let refusal = await #expect(throws: PeripheralError.self) { try await session.serving((any ImprovControl).self).improvAuthorize("") }

        #expect(refusal?.code == .invalid)
        #expect(refusal?.message.contains("Improv needs no authorization here") == true, "\(String(describing: refusal))")
    }

    @Test("device info answers with bleadvd, its version, the hardware and the name")
    func deviceInfo() async throws {
        let session = try await session()

        session.mock.emit(.gatt(GATTEvent(Self.command, .written([0x03, 0x00, 0x03], .bytes([0x03, 0x00, 0x03])), central: "")))
        try await eventually("a result is notified", every: .milliseconds(1)) { !notified(session, Self.result).isEmpty }

        #expect(notified(session, Self.result) == [Improv.result(of: 0x03, ["bleadvd", ControlAPI.version, "Raspberry Pi 4", "kitchen"])!])
    }

    @Test("a frame with a bad checksum is answered with invalid RPC, and the state stays")
    func badChecksum() async throws {
        let session = try await session()
        var frame = Self.wifi
        frame[frame.count - 1] &+= 1

        session.mock.emit(.gatt(GATTEvent(Self.command, .written(frame, .bytes(frame)), central: "")))
        // The error is set first, then the state (each its own call): both, before looking.
        try await eventually("a state is notified", every: .milliseconds(1)) { !notified(session, Self.state).isEmpty }

        #expect(notified(session, Self.error) == [[0x01]])
        #expect(notified(session, Self.state) == [[0x02]])
    }

    @Test("a set of improv's values is refused: they are the session's")
    func setRefused() async throws {
        let session = try await session()

        let refusal = await #expect(throws: PeripheralError.self) { try await session.daemon.advertising.set("improv", ["state": .string("04")]) }

        #expect(refusal?.code == .invalid)
        #expect(refusal?.message.hasPrefix("improv's values are Improv's own") == true, "\(String(describing: refusal))")
        #expect(notified(session, Self.state).isEmpty)
    }

    @Test("without NetworkManager on the bus, a join ends in unable to connect and the journal says why")
    func networkManagerAbsentJoin() async throws {
        let session = try await session(onDBus: true, networkManager: true)

        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: "AA:BB:CC:DD:EE:FF")))
        // The error is set first, then the state (each its own call): the state that follows
        // provisioning is the join's last.
        try await eventually("the state after provisioning is notified", every: .milliseconds(1)) { notified(session, Self.state).count >= 2 }

        #expect(notified(session, Self.error) == [[0x00], [0x03]])
        #expect(notified(session, Self.state) == [[0x03], [0x02]])
        #expect(session.logs.all.contains { $0.contains("could not join \"Home\"") && $0.contains("NetworkManager refused GetDevices") && $0.contains("ServiceUnknown") },
                "\(session.logs.all.filter { $0.contains("improv") })")
    }

    @Test("without NetworkManager on the bus, a scan is answered with no networks and the journal says why")
    func networkManagerAbsentScan() async throws {
        let session = try await session(onDBus: true, networkManager: true)

        session.mock.emit(.gatt(GATTEvent(Self.command, .written([0x04, 0x00, 0x04], .bytes([0x04, 0x00, 0x04])), central: "")))
        try await eventually("a result is notified", every: .milliseconds(1)) { !notified(session, Self.result).isEmpty }

        #expect(notified(session, Self.result) == [Improv.scanResult([])])
        #expect(session.logs.all.contains { $0.contains("could not list the Wi-Fi networks in range: NetworkManager refused GetDevices") })
    }

    /// A joiner that counts the scans it is asked for, each finding one network; it cannot tell
    /// whether the Wi-Fi is connected (Improv stays offered).
    final class Scanner: NetworkJoining, @unchecked Sendable {
        private let lock = NSLock()
        private var scans = 0
        var scanCount: Int { lock.withLock { scans } }

        func join(_ credentials: Improv.Credentials) async throws -> String? { nil }
        func networks() async throws -> [Improv.Network] {
            lock.withLock { scans += 1 }
            return [Improv.Network(ssid: Array("Home".utf8), rssi: -40, security: .wpa2)]
        }
        func wifi() async throws -> WifiWatch? { nil }
    }

    @Test("scans asked within 10 s of the last are answered from it, each at once, without asking NetworkManager again")
    func scanReused() async throws {
        let scanner = Scanner()
        let session = try await session(networkManager: true, joiner: scanner)
        let scan: [UInt8] = [0x04, 0x00, 0x04]
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(scan, .bytes(scan)), central: "AA:BB:CC:DD:EE:FF")))
        try await eventually("a result is notified", every: .milliseconds(1)) { !notified(session, Self.result).isEmpty }

        for _ in 1...50 {
            session.mock.emit(.gatt(GATTEvent(Self.command, .written(scan, .bytes(scan)), central: "AA:BB:CC:DD:EE:FF")))
        }
        try await eventually("51 results are notified", every: .milliseconds(1)) { notified(session, Self.result).count >= 51 }

        #expect(scanner.scanCount == 1)
        #expect(Set(notified(session, Self.result)).count == 1)
    }

    @Test("a scan asked 10 s after the last asks NetworkManager again")
    func scanAgainAfterReuse() async throws {
        let scanner = Scanner()
        let session = try await session(networkManager: true, joiner: scanner)
        let scan: [UInt8] = [0x04, 0x00, 0x04]
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(scan, .bytes(scan)), central: "AA:BB:CC:DD:EE:FF")))
        try await eventually("a result is notified", every: .milliseconds(1)) { !notified(session, Self.result).isEmpty }

        session.clock.advance(by: .seconds(10))
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(scan, .bytes(scan)), central: "AA:BB:CC:DD:EE:FF")))
        try await eventually("a second result is notified", every: .milliseconds(1)) { notified(session, Self.result).count >= 2 }

        #expect(scanner.scanCount == 2)
    }

    @Test("a stranger's 01 FF (a frame's start announcing 255 bytes) does not hold back another central's frame: it is provisioned at once")
    func strangersPartialFrameDoesNotWedge() async throws {
        let session = try await session()
        session.mock.emit(.gatt(GATTEvent(Self.command, .written([0x01, 0xFF], .bytes([0x01, 0xFF])), central: "66:66:66:66:66:66")))

        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: "AA:BB:CC:DD:EE:FF")))
        await advance(session) { notified(session, Self.result).count == 1 }

        #expect(notified(session, Self.state) == [[0x03], [0x04]])
    }

    @Test("two centrals writing frames in pieces, interleaved, each get their own frame joined")
    func interleavedCentrals() async throws {
        let session = try await session()
        let scan: [UInt8] = [0x04, 0x00, 0x04]
        let stranger = "66:66:66:66:66:66", phone = "AA:BB:CC:DD:EE:FF"

        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Array(Self.wifi[..<5]), .bytes([])), central: phone)))
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Array(scan[..<1]), .bytes([])), central: stranger)))
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Array(Self.wifi[5...]), .bytes([])), central: phone)))
        await advance(session) { notified(session, Self.result).count == 1 }

        #expect(notified(session, Self.error).allSatisfy { $0 == [0x00] })
        #expect(notified(session, Self.state) == [[0x03], [0x04]])
    }

    @Test("a partial frame is dropped once its central disconnects: the whole frame it sends when it is back is taken as it is")
    func partialFrameDroppedAtDisconnect() async throws {
        let session = try await session()
        let phone = "AA:BB:CC:DD:EE:FF"
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Array(Self.wifi[..<5]), .bytes([])), central: phone)))

        session.mock.emit(.disconnected(central: phone, adapter: "hci0"))
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Self.wifi, .bytes(Self.wifi)), central: phone)))
        await advance(session) { notified(session, Self.result).count == 1 }

        #expect(notified(session, Self.state) == [[0x03], [0x04]])
        #expect(session.logs.all.contains { $0.contains("improv: dropped \(phone)'s partial frame (5 bytes): it disconnected") }, "\(session.logs.all)")
    }

    @Test("a partial frame is dropped 5 s after its last part, not sooner, and the journal says so without its bytes")
    func partialFrameExpires() async throws {
        let session = try await session()
        let phone = "AA:BB:CC:DD:EE:FF"
        let due = session.clock.now.advanced(by: .seconds(5))
        session.mock.emit(.gatt(GATTEvent(Self.command, .written(Array(Self.wifi[..<10]), .bytes([])), central: phone)))
        try await eventually("the partial frame's deadline is armed") { session.clock.deadlines.contains(due) }

        session.clock.advance(by: .milliseconds(4_900))
        try await Task.sleep(for: .milliseconds(50))
        let early = session.logs.all.contains { $0.contains("partial frame") }
        session.clock.advance(by: .milliseconds(100))
        try await eventually("the journal says the partial frame was dropped") { session.logs.all.contains { $0.contains("partial frame") } }

        #expect(!early)
        #expect(session.logs.all.contains { $0.contains("improv: dropped \(phone)'s partial frame (10 bytes): no next part within 5 s") })
        #expect(!session.logs.all.contains { $0.contains("hunter") })
    }
}

