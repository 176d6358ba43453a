@testable import AdvertiserDaemon
import Foundation
import AdvertiserConfig
import Peripheral
import PeripheralMocks
import Testing

/// Improv's state machine as a value, on a manual clock's instants. Frames come from
/// `Improv.result(of:_:)` and the frames py-improv-ble-client makes (ImprovTests).
@Suite("Improv's state machine")
struct ImprovSessionTests {
    let start = ManualClock().now
    /// The central a client writes from.
    static let client = "AA:BB:CC:DD:EE:FF"
    static let home = Improv.Credentials(ssid: Array("Home".utf8), password: Array("hunter22".utf8))!
    /// Wi-Fi settings for "Home" / "hunter22".
    static let wifi = frame(0x01, [4] + Array("Home".utf8) + [8] + Array("hunter22".utf8))
    static let info = ["bleadvd", "0.9.0", "Raspberry Pi 4", "kitchen"]

    static func frame(_ id: UInt8, _ data: [UInt8]) -> [UInt8] {
        let head = [id, UInt8(data.count)] + data
        return head + [UInt8(truncatingIfNeeded: head.reduce(0) { $0 + Int($1) })]
    }

    /// A session with identify (unless told otherwise) and device info; a join program, so no
    /// scan (unless told to join by NetworkManager).
    func makeSession(needsAuthorization: Bool = false, identify: Bool = true, joiner: ImprovConfig.Joiner = .program("/usr/local/libexec/join-wifi")) -> ImprovSession<ManualClock.Instant> {
        var config = ImprovConfig(joiner: joiner)
        config.needsAuthorization = needsAuthorization
        config.identify = identify ? ["/bin/true"] : nil
        return ImprovSession(config, deviceInfo: Self.info)
    }

    @Test("without authorization it starts authorized, and credentials start a join")
    func credentialsJoin() {
        var session = makeSession()

        let step = session.handle(Self.wifi, from: Self.client, at: start)

        #expect(step == .join(Self.home))
        #expect(session.state == .provisioning)
        #expect(session.error == .none)
    }

    @Test("credentials before a person authorized are refused with not authorized")
    func credentialsBeforeAuthorization() {
        var session = makeSession(needsAuthorization: true)

        let step = session.handle(Self.wifi, from: Self.client, at: start)

        #expect(step == .none)
        #expect(session.state == .authorizationRequired)
        #expect(session.error == .notAuthorized)
    }

    @Test("after bleadvctl improv authorize, credentials start a join")
    func credentialsAfterAuthorization() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)

        let step = session.handle(Self.wifi, from: Self.client, at: start.advanced(by: .seconds(59)))

        #expect(step == .join(Self.home))
    }

    @Test("while one central is authorized, another's credentials are ignored: no join, no error, the state stays")
    func strangerIgnoredWhileAuthorized() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)

        let step = session.handle(Self.wifi, from: "66:66:66:66:66:66", at: start.advanced(by: .seconds(1)))

        #expect(step == .ignored)
        #expect(session.state == .authorized)
        #expect(session.error == .none)
    }

    @Test("during the authorized central's join, another's malformed frame is ignored: the error its client waits on stays none")
    func strangerIgnoredDuringJoin() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)
        _ = session.handle(Self.wifi, from: Self.client, at: start)

        let step = session.handle([0x02, 0x00, 0x00], from: "66:66:66:66:66:66", at: start.advanced(by: .seconds(1)))

        #expect(step == .ignored)
        #expect(session.state == .provisioning)
        #expect(session.error == .none)
    }

    @Test("once the authorization ran out, another central's credentials are refused with not authorized, as anyone's")
    func strangerAfterExpiry() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)
        _ = session.expire(at: start.advanced(by: .seconds(60)))

        let step = session.handle(Self.wifi, from: "66:66:66:66:66:66", at: start.advanced(by: .seconds(61)))

        #expect(step == .none)
        #expect(session.error == .notAuthorized)
        #expect(session.authorizedCentral == nil)
    }

    @Test("an authorization runs out at its time, and credentials are refused again")
    func authorizationRunsOut() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)

        let expired = session.expire(at: start.advanced(by: .seconds(60)))
        let step = session.handle(Self.wifi, from: Self.client, at: start.advanced(by: .seconds(60)))

        #expect(expired)
        #expect(session.state == .authorizationRequired)
        #expect(step == .none)
        #expect(session.error == .notAuthorized)
    }

    @Test("a frame with a bad checksum is an invalid RPC, and the state stays")
    func badChecksum() {
        var session = makeSession()
        var frame = Self.wifi
        frame[frame.count - 1] &+= 1

        let step = session.handle(frame, from: Self.client, at: start)

        #expect(step == .none)
        #expect(session.error == .invalidRPC)
        #expect(session.state == .authorized)
    }

    @Test("a command the device does not offer is an unknown RPC", arguments: [
        (UInt8(0x02), false), (0x04, true), (0x05, true), (0x09, true),
    ])
    func notOffered(id: UInt8, identify: Bool) {
        var session = makeSession(identify: identify)

        let step = session.handle(Self.frame(id, []), from: Self.client, at: start)

        #expect(step == .none)
        #expect(session.error == .unknownRPC)
    }

    @Test("device info is answered without authorization, with the configured strings")
    func deviceInfo() {
        var session = makeSession(needsAuthorization: true)

        let step = session.handle(Self.frame(0x03, []), from: Self.client, at: start)

        #expect(step == .result(Improv.result(of: 0x03, Self.info)!))
    }

    @Test("with NetworkManager joining, a scan is answered without authorization by the networks found")
    func scan() {
        var session = makeSession(needsAuthorization: true, joiner: .networkManager)
        let networks = [Improv.Network(ssid: Array("Home".utf8), rssi: -52, security: .wpa2)]

        let step = session.handle(Self.frame(0x04, []), from: Self.client, at: start)

        #expect(step == .scan)
        #expect(session.scanned(networks) == .result(Improv.scanResult(networks)))
        #expect(session.state == .authorizationRequired)
    }

    @Test("a joined network makes the device provisioned, and the result carries the redirect")
    func joined() {
        var session = makeSession()
        _ = session.handle(Self.wifi, from: Self.client, at: start)

        let step = session.joined(redirect: "http://192.168.4.2:8123")

        #expect(session.state == .provisioned)
        #expect(step == .result(Improv.result(of: 0x01, ["http://192.168.4.2:8123"])!))
    }

    @Test("a failed join says unable to connect, takes credentials again and restarts the authorization's time")
    func failedToJoin() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)
        _ = session.handle(Self.wifi, from: Self.client, at: start.advanced(by: .seconds(50)))

        session.failedToJoin(at: start.advanced(by: .seconds(55)))

        #expect(session.state == .authorized)
        #expect(session.error == .unableToConnect)
        #expect(session.authorizedUntil == start.advanced(by: .seconds(115)))
    }

    @Test("credentials while a join is under way start no second one")
    func credentialsWhileProvisioning() {
        var session = makeSession()
        _ = session.handle(Self.wifi, from: Self.client, at: start)

        let step = session.handle(Self.wifi, from: Self.client, at: start)

        #expect(step == .none)
        #expect(session.state == .provisioning)
        #expect(session.error == .unknown)
    }

    @Test("one authorization allows a bounded number of failed joins; after the last, authorization is required again")
    func failedJoinsBounded() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)
        for attempt in 1...ImprovSession<ManualClock.Instant>.failedJoinsPerAuthorization {
            #expect(session.handle(Self.wifi, from: Self.client, at: start) == .join(Self.home), "attempt \(attempt)")
            session.failedToJoin(at: start)
        }

        let step = session.handle(Self.wifi, from: Self.client, at: start)

        #expect(step == .none)
        #expect(session.state == .authorizationRequired)
        #expect(session.error == .notAuthorized)
    }

    @Test("a new authorization allows failed joins anew")
    func authorizationRenewsFailedJoins() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)
        for _ in 1...ImprovSession<ManualClock.Instant>.failedJoinsPerAuthorization {
            _ = session.handle(Self.wifi, from: Self.client, at: start)
            session.failedToJoin(at: start)
        }

        session.authorize(Self.client, at: start)

        #expect(session.handle(Self.wifi, from: Self.client, at: start) == .join(Self.home))
    }

    @Test("reconfigured during a join, the session is still joining: credentials start no second join")
    func reconfiguredWhileJoining() {
        var session = makeSession()
        _ = session.handle(Self.wifi, from: Self.client, at: start)

        var reconfigured = session.reconfigured(ImprovConfig(joiner: .program("/usr/local/libexec/other-join")), deviceInfo: Self.info)
        let step = reconfigured.handle(Self.wifi, from: Self.client, at: start)

        #expect(reconfigured.state == .provisioning)
        #expect(step == .none)
    }

    @Test("reconfigured to need authorization, an authorized session without a person's authorization needs one")
    func reconfiguredToNeedAuthorization() {
        let session = makeSession()
        var config = ImprovConfig(joiner: .program("/usr/local/libexec/join-wifi"))
        config.needsAuthorization = true

        let reconfigured = session.reconfigured(config, deviceInfo: Self.info)

        #expect(reconfigured.state == .authorizationRequired)
    }

    @Test("reconfigured while a person's authorization holds, it keeps holding until its time")
    func reconfiguredKeepsAuthorization() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)
        var config = ImprovConfig(joiner: .program("/usr/local/libexec/other-join"))
        config.needsAuthorization = true

        let reconfigured = session.reconfigured(config, deviceInfo: Self.info)

        #expect(reconfigured.state == .authorized)
        #expect(reconfigured.authorizedUntil == session.authorizedUntil)
    }

    @Test("a join that fails after its central's link ended gives no authorization back: a person must authorize again")
    func failedJoinAfterTheLinkEnded() {
        var session = makeSession(needsAuthorization: true)
        session.authorize(Self.client, at: start)
        _ = session.handle(Self.wifi, from: Self.client, at: start)
        let ended = session.linkEnded(Self.client)

        session.failedToJoin(at: start.advanced(by: .seconds(5)))

        #expect(ended)
        #expect(session.state == .authorizationRequired)
        #expect(session.authorizedCentral == nil)
        #expect(session.handle(Self.wifi, from: Self.client, at: start.advanced(by: .seconds(6))) == .none)
        #expect(session.error == .notAuthorized)
    }
}

@Suite("The board's model in Improv's device info")
struct BoardModelTests {
    @Test("the model comes from the first file that names one, /sys's before /proc's, which the unit's ProcSubset=pid hides")
    func firstFileNamingOne() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("model-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let sys = folder.appendingPathComponent("sys-model").path
        try Data("Raspberry Pi 4 Model B Rev 1.4\0".utf8).write(to: URL(fileURLWithPath: sys))

        let model = ImprovRun<ManualClock.Instant>.boardModel(files: [folder.appendingPathComponent("hidden").path, sys])

        #expect(model == "Raspberry Pi 4 Model B Rev 1.4")
    }
}
