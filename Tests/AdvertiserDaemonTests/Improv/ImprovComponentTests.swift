@testable import AdvertiserDaemon
import AdvertiserConfig
import Events
import Logging
import Peripheral
import PeripheralMocks
import Synchronization
import TestSupport
import Testing

/// The Improv provisioner in process, through its ports: a showing port that records, a joiner
/// the test drives, the manual clock. No bus, no module: what reaches a client over D-Bus is
/// ImprovDaemonTests' and ImprovWifiTests'.
@Suite("The Improv component", .timeLimit(.minutes(3)))
struct ImprovComponentTests {
    typealias Component = ImprovProvisioner<ManualClock>

    /// What the component asked its port to show or offer, in order: `offer`, `offer fresh`,
    /// `withdraw`, or `show` with the state byte (and `result` when one came).
    final class Display: Showing {
        let said = Mutex<[String]>([])

        func show(_ name: String, _ values: [(characteristic: String, bytes: [UInt8])], advertisement: ConfiguredAdvertisement) async {
            let shown = values.map { "\($0.characteristic)=\($0.bytes.count == 1 ? String($0.bytes[0]) : "\($0.bytes.count) bytes")" }
            said.withLock { $0.append((["show"] + shown).joined(separator: " ")) }
        }

        func offer(_ name: String, withheld: String?, fresh: ConfiguredService?) async {
            said.withLock { $0.append(withheld == nil ? (fresh == nil ? "offer" : "offer fresh") : "withdraw") }
        }

        func mark(_ name: String, withheld: String?) async {
            said.withLock { $0.append(withheld == nil ? "marked offered" : "marked withheld") }
        }

        var all: [String] { said.withLock { $0 } }
    }

    /// A joiner whose Wi-Fi is connected or not as the test says, and whose joins succeed.
    struct Joiner: NetworkJoining {
        let connected: Bool?
        func join(_ credentials: Improv.Credentials) async throws -> String? { "192.168.4.2" }
        func networks() async throws -> [Improv.Network] { [] }
        func wifi() async throws -> WifiWatch? {
            connected.map { WifiWatch(connected: $0, changes: AsyncStream { $0.finish() }) }
        }
    }

    /// A component for `config` whose Wi-Fi is `connected` (nil: the joiner cannot tell), and
    /// the port and loop the test keeps.
    struct Harness {
        let clock = ManualClock()
        let display = Display()
        let loop: EventLoop
        let improv: Component

        init(_ config: ImprovConfig = Harness.open, connected: Bool? = false) throws {
            loop = try EventLoop.onNewThread(name: "improv-test")
            let joiner = Joiner(connected: connected)
            improv = Component(
                config: config, configPath: "/etc/bleadvd.toml", clock: clock, logger: Logger(label: "test"), executor: loop,
                joiners: { _ in joiner })
        }

        /// Improv needing no authorization, joining through the test's joiner.
        static var open: ImprovConfig {
            var config = ImprovConfig()
            config.needsAuthorization = false
            config.redirectURL = "http://{address}:8123/"
            return config
        }
    }

    @Test("started while the Wi-Fi is not connected, Improv goes on air through the port")
    func startOffers() async throws {
        let h = try Harness(connected: false)

        await h.improv.startLast(showing: h.display)

        #expect(h.display.all == ["offer"])
    }

    @Test("started while the Wi-Fi is connected, Improv asks the port for nothing")
    func startWithWifiOffersNothing() async throws {
        let h = try Harness(connected: true)

        await h.improv.startLast(showing: h.display)

        #expect(h.display.all.isEmpty)
    }

    @Test("a reload marks on the port whether Improv is offered, without taking it on or off the air itself", arguments: [
        (true, "marked withheld"), (false, "marked offered"),
    ])
    func reloadMarksWhetherOffered(removed: Bool, marked: String) async throws {
        let h = try Harness(connected: false)
        await h.improv.startLast(showing: h.display)

        await h.improv.reconfigure(removed ? nil : Harness.open)

        #expect(h.display.all == ["offer", marked])
    }

    @Test("Wi-Fi settings join, show provisioned with the redirect, and Improv leaves the air once the withdrawal's time came")
    func joinShowsThenWithdraws() async throws {
        let h = try Harness()
        await h.improv.startLast(showing: h.display)

        await h.improv.written(ImprovDaemonTests.wifi, central: "AA:BB:CC:DD:EE:01")
        await h.improv.perform(.join(Improv.Credentials(ssid: Array("Home".utf8), password: Array("hunter22".utf8))!))
        h.clock.advance(by: Component.withdrawDelay)
        await h.improv.fired(.withdrawal, at: h.clock.now)

        #expect(h.display.all == ["offer", "show error=0 state=3", "show error=0 state=4 result=\(Improv.result(of: 0x01, ["http://192.168.4.2:8123/"])!.count) bytes", "withdraw"])
    }

    @Test("the Wi-Fi staying disconnected for the offer delay offers Improv again with a fresh service, and not before")
    func offeredAgainOnlyAfterTheDelay() async throws {
        let h = try Harness(connected: true)
        await h.improv.startLast(showing: h.display)
        await h.improv.wifiChanged(connected: false)

        h.clock.advance(by: Component.offerDelay - .seconds(1))
        await h.improv.fired(.offer, at: h.clock.now)
        let early = h.display.all
        h.clock.advance(by: .seconds(1))
        await h.improv.fired(.offer, at: h.clock.now)

        #expect(early.isEmpty)
        #expect(h.display.all == ["offer fresh", "show error=0 state=2"])
    }

    @Test("authorize is refused, saying why, while Improv is off the air because the Wi-Fi is connected")
    func authorizeRefusedWhileWithheld() async throws {
        var config = ImprovConfig()
        config.needsAuthorization = true
        let h = try Harness(config, connected: true)
        await h.improv.startLast(showing: h.display)

        let refusal = await #expect(throws: PeripheralError.self) { try await h.improv.improvAuthorize("") }

        #expect(refusal?.code == .invalid)
        #expect(refusal?.message.contains("Wi-Fi is connected") == true)
        #expect(h.display.all.isEmpty)
    }

    @Test("a partial frame whose next part does not come in time is dropped: a whole frame sent after it is taken as it is")
    func partialFrameExpires() async throws {
        let h = try Harness()
        await h.improv.startLast(showing: h.display)
        await h.improv.written(Array(ImprovDaemonTests.wifi.prefix(5)), central: "AA:BB:CC:DD:EE:01")

        h.clock.advance(by: ImprovFrames<ManualClock.Instant>.partLimit)
        await h.improv.fired(.frame, at: h.clock.now)
        await h.improv.written(ImprovDaemonTests.wifi, central: "AA:BB:CC:DD:EE:01")

        #expect(h.display.all == ["offer", "show error=0 state=3"])
    }
}
