import AdvertiserControl
import AdvertiserDaemon
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// A person's `bleadvctl improv authorize` lets one central in: the one their Improv client
/// runs on, connected when they authorize. A stranger in range, connected beside it, writing
/// credentials before, during or after, gets nothing joined and changes nothing the owner's
/// client sees (#64 item 2). Over the mock, with a real join program; the real `bleadvctl` where
/// what it prints is the point.
@Suite("Improv: an authorization belongs to one central", .timeLimit(.minutes(3)))
struct ImprovAuthorizationTests {
    let improv = ImprovDaemonTests()
    static let owner = "AA:BB:CC:DD:EE:01"
    static let stranger = "66:66:66:66:66:66"

    /// Wi-Fi settings for `ssid` / "hunter22".
    static func wifi(_ ssid: String) -> [UInt8] {
        let data: [UInt8] = [UInt8(ssid.utf8.count)] + Array(ssid.utf8) + [8] + Array("hunter22".utf8)
        let head: [UInt8] = [0x01, UInt8(data.count)] + data
        return head + [UInt8(truncatingIfNeeded: head.reduce(0) { $0 + Int($1) })]
    }

    func write(_ session: DaemonSession, _ frame: [UInt8], from central: String) {
        session.mock.emit(.gatt(GATTEvent(ImprovDaemonTests.command, .written(frame, .bytes(frame)), central: central)))
    }

    @Test("a stranger who connects after the owner authorized and sends credentials gets nothing joined, and the owner's join goes on")
    func strangerAfterAuthorization() async throws {
        let session = try await improv.session(authorization: "bleadvctl")
        _ = try await improv.grant(session, connected: [Self.owner])

        improv.reads(session, Self.stranger)
        for _ in 1...3 { write(session, Self.wifi("Stranger"), from: Self.stranger) }
        write(session, Self.wifi("Owner"), from: Self.owner)
        await improv.advance(session) { improv.notified(session, ImprovDaemonTests.result).count == 1 }

        #expect(try String(contentsOfFile: session.folder.appendingPathComponent("runs").path, encoding: .utf8) == "run\n")
        #expect(try String(contentsOfFile: session.folder.appendingPathComponent("ssid").path, encoding: .utf8) == "Owner")
    }

    @Test("a stranger's credentials while the owner is authorized notify no error the owner's client would take for its own")
    func strangerNotifiesNothing() async throws {
        let session = try await improv.session(authorization: "bleadvctl")
        _ = try await improv.grant(session, Self.owner, connected: [Self.owner, Self.stranger])
        let before = session.mock.calls.updatedValues.count

        write(session, Self.wifi("Stranger"), from: Self.stranger)
        write(session, [0x02, 0x00, 0x00], from: Self.stranger)
        try await eventually("the stranger's frames are handled") {
            session.logs.all.contains { $0.contains("ignored") && $0.contains(Self.stranger) }
        }

        #expect(session.mock.calls.updatedValues.count == before)
        #expect(improv.notified(session, ImprovDaemonTests.state).last == [0x02])
    }

    @Test("with two centrals connected, an authorization without an address names both and authorizes neither")
    func twoConnectedNeedAnAddress() async throws {
        let session = try await improv.session(authorization: "bleadvctl")
        improv.reads(session, Self.owner)

        let refusal = await #expect(throws: PeripheralError.self) { try await improv.grant(session, connected: [Self.stranger]) }

        #expect(refusal?.code == .invalid)
        let message = refusal?.message ?? ""
        #expect(message.contains(Self.owner) && message.contains(Self.stranger), "\(message)")
        #expect(message.contains("bleadvctl improv authorize ADDRESS"), "\(message)")
        #expect(improv.notified(session, ImprovDaemonTests.state).allSatisfy { $0 != [0x02] })
    }

    @Test("with two centrals connected, bleadvctl improv authorize ADDRESS authorizes that one, and says so")
    func addressNamesTheOne() async throws {
        let session = try await improv.session(onDBus: true, authorization: "bleadvctl")

        let result = try await improv.authorize(session, Self.owner.lowercased(), connected: [Self.owner, Self.stranger])
        write(session, Self.wifi("Stranger"), from: Self.stranger)
        write(session, Self.wifi("Owner"), from: Self.owner)
        await improv.advance(session) { improv.notified(session, ImprovDaemonTests.result).count == 1 }

        #expect(result.status == 0, "\(result.errors)")
        #expect(result.output == "authorized \(Self.owner): it may send Wi-Fi credentials for the next 60 s\n")
        #expect(try String(contentsOfFile: session.folder.appendingPathComponent("ssid").path, encoding: .utf8) == "Owner")
    }

    @Test("with no central connected, an authorization is refused: the client connects first")
    func noneConnected() async throws {
        let session = try await improv.session(authorization: "bleadvctl")

        let refusal = await #expect(throws: PeripheralError.self) { try await improv.grant(session, connected: []) }

        #expect(refusal?.code == .invalid)
        #expect(refusal?.message.contains("no central is connected to Improv") == true, "\(String(describing: refusal))")
    }

    @Test("an address that is not connected is refused (exit 2), and text that is no address is refused before bleadvd is asked, escaped")
    func unknownAddress() async throws {
        let session = try await improv.session(onDBus: true, authorization: "bleadvctl")
        improv.reads(session, Self.owner)
        try await improv.settle(session)

        let absent = try await session.ctl("improv", "authorize", Self.stranger)
        let malformed = try await session.ctl("improv", "authorize", "owner\u{1B}[2J")

        #expect(absent.status == 2)
        #expect(absent.errors.contains("\(Self.stranger) is not connected to Improv"), "\(absent.errors)")
        #expect(malformed.status == 2)
        #expect(malformed.errors.contains("is not a Bluetooth address"), "\(malformed.errors)")
        #expect(!malformed.errors.contains("\u{1B}"), "\(malformed.errors)")
    }

    @Test("a central that is connected but never used Improv (the box's own link to a sensor, a phone reading another service) is not one to authorize")
    func onlyImprovUsersCount() async throws {
        let session = try await improv.session(authorization: "bleadvctl")
        session.mock.emit(.connected(central: "11:22:33:44:55:66", adapter: "hci0"))
        session.mock.emit(.gatt(GATTEvent(GATTCharacteristicID(service: "lamp", characteristic: "level"), .read, central: "77:88:99:AA:BB:CC")))

        let authorized = try await improv.grant(session, connected: [Self.owner])

        #expect(authorized.central == Self.owner)
    }

    @Test("the owner's link ending does not hand the authorization to whoever comes next")
    func ownerLeaves() async throws {
        let session = try await improv.session(authorization: "bleadvctl")
        _ = try await improv.grant(session, connected: [Self.owner])

        session.mock.emit(.disconnected(central: Self.owner, adapter: "hci0"))
        improv.reads(session, Self.stranger)
        write(session, Self.wifi("Stranger"), from: Self.stranger)
        // The authorization ended with the owner's link: the stranger's credentials are refused.
        try await eventually("the stranger's frame is handled") { improv.notified(session, ImprovDaemonTests.error).last == [0x04] }

        #expect(!FileManager.default.fileExists(atPath: session.folder.appendingPathComponent("runs").path))
    }

    // The address an authorization is bound to goes over the air in the clear: once the
    // owner's link ends, a central that takes that address must find no authorization left.
    @Test("the authorized central's link ending ends its authorization: credentials from a new link with its address get not authorized, and nothing runs")
    func authorizationEndsWithTheLink() async throws {
        let session = try await improv.session(authorization: "bleadvctl")
        _ = try await improv.grant(session, connected: [Self.owner])

        session.mock.emit(.disconnected(central: Self.owner, adapter: "hci0"))
        improv.reads(session, Self.owner)
        write(session, Self.wifi("Owner"), from: Self.owner)
        try await eventually("the credentials are refused or a join starts") {
            improv.notified(session, ImprovDaemonTests.error).last == [0x04] || improv.notified(session, ImprovDaemonTests.state).last == [0x03]
        }

        #expect(improv.notified(session, ImprovDaemonTests.error).last == [0x04])
        #expect(improv.notified(session, ImprovDaemonTests.state).last == [0x01])
        #expect(!FileManager.default.fileExists(atPath: session.folder.appendingPathComponent("runs").path))
        #expect(session.logs.all.contains { $0.contains("improv: \(Self.owner)'s authorization ended with its link") }, "\(session.logs.all.filter { $0.contains("improv") })")
    }
}
