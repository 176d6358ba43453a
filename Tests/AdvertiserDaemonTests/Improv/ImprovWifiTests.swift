import AdvertiserControl
import AdvertiserDaemon
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// Improv is offered only while this machine's Wi-Fi is not connected, as its specification
/// says (the service runs on a device without a network, and stops once provisioned): the
/// joiner tells the daemon whether the Wi-Fi is connected (NetworkManager's device state, in
/// the test bed), and the mock counts what reached BlueZ.
@Suite("Improv follows the Wi-Fi", .timeLimit(.minutes(3)))
struct ImprovWifiTests {
    /// A joiner whose Wi-Fi the test connects and disconnects; its joins succeed at once. It
    /// cannot tell whether the Wi-Fi is connected the first `refusals` times it is asked.
    final class Wifi: NetworkJoining, @unchecked Sendable {
        let connected: Bool
        let changes: AsyncStream<Bool>
        let change: AsyncStream<Bool>.Continuation
        /// When set, an answer waits for the test to yield here.
        let answer: AsyncStream<Void>?
        private let lock = NSLock()
        private var refusals: Int
        private var asked = 0

        init(connected: Bool, refusals: Int = 0, answer: AsyncStream<Void>? = nil) {
            self.connected = connected
            self.refusals = refusals
            self.answer = answer
            (changes, change) = AsyncStream<Bool>.makeStream()
        }

        /// How many times it was asked whether the Wi-Fi is connected.
        var askedCount: Int { lock.withLock { asked } }

        func join(_ credentials: Improv.Credentials) async throws -> String? { "192.168.4.2" }
        func networks() async throws -> [Improv.Network] { [] }
        func wifi() async throws -> WifiWatch? {
            let refused = lock.withLock {
                asked += 1
                guard refusals > 0 else { return false }
                refusals -= 1
                return true
            }
            if refused { throw Refusal() }
            if let answer { for await _ in answer { break } }
            return WifiWatch(connected: connected, changes: changes)
        }

        struct Refusal: Error, CustomStringConvertible {
            var description: String { "NetworkManager is starting" }
        }
    }

    /// Improv with no authorization needed, nothing else configured.
    static let config = """
        [improv]
        join = "networkmanager"
        authorization = "none"
        """

    func session(onDBus: Bool = false, _ wifi: Wifi, extra: String = "") async throws -> DaemonSession {
        try await DaemonSession(onDBus: onDBus, config: Self.config + extra, joiner: wifi) { mock in
            mock.scriptRegisterApplication(.always(.success(RegistrationID("/org/bleadvd/gatt/app1"))))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptUpdateValue(.always(.success(())))
            mock.scriptUpdate(.always(.success(())))
            mock.scriptReregister(.always(.success(false)))
        }
    }

    /// Waits until the daemon logged a line holding `text` (it runs on a thread of its own):
    /// what it does after a change of the Wi-Fi, the clock must not pass before.
    func logged(_ text: String, by session: DaemonSession) async throws {
        try await eventually("the journal has a line with \(text)", every: .milliseconds(1)) { session.logs.all.contains(where: { $0.contains(text) }) }
    }

    /// Moves the clock on by `duration` and lets what is due run. The daemon sets a timer
    /// before it logs the line a test waits for, so the timer's deadline is fixed by then.
    func pass(_ duration: Duration, in session: DaemonSession) async {
        session.clock.advance(by: duration)
        await settle()
    }

    /// Moves the clock on by `duration` once a timer sleeps (the only sleeper: the config has
    /// nothing else and the module's self-check is off), and lets what is due run.
    func passOnceAsleep(_ duration: Duration, in session: DaemonSession) async {
        await session.clock.waitForSleepers()
        await pass(duration, in: session)
    }

    /// Lets the daemon's tasks run what is ready.
    func settle() async {
        for _ in 0..<200 { await Task.yield() }
    }

    @Test("while the Wi-Fi is connected, Improv is neither advertised nor served, and the journal says why")
    func connectedAtStart() async throws {
        let session = try await session(Wifi(connected: true))

        #expect(session.mock.calls.started.isEmpty)
        #expect(session.mock.calls.registeredApplications.isEmpty)
        #expect(session.logs.all.contains { $0.contains("improv: not offered: this machine's Wi-Fi is connected") })
    }

    @Test("while the Wi-Fi is not connected, Improv is advertised and served from the start")
    func disconnectedAtStart() async throws {
        let session = try await session(Wifi(connected: false))

        #expect(session.mock.startAdvertisingCallCount == 1)
        #expect(session.mock.calls.registeredApplications.map { $0.application.services.map(\.uuid) } == [[Improv.serviceUUID]])
    }

    @Test("a Wi-Fi slow to be told of holds back Improv alone: the other advertisements go on air first")
    func othersFirst() async throws {
        let (answer, release) = AsyncStream<Void>.makeStream()
        let config = Self.config + "\n[advertisement.heart]\nlocal_name = \"Thermo-1\"\n"
        let session = try await DaemonSession(config: config, waitForReady: false, joiner: Wifi(connected: false, answer: answer)) { mock in
            mock.scriptRegisterApplication(.always(.success(RegistrationID("/org/bleadvd/gatt/app1"))))
        }

        try await eventually("an advertisement is started", every: .milliseconds(1)) { !session.mock.calls.started.isEmpty }
        let beforeTheAnswer = session.mock.calls.started.map(\.advertisement.localName)
        release.yield()
        try await eventually("a second advertisement is started", every: .milliseconds(1)) { session.mock.startAdvertisingCallCount >= 2 }

        #expect(beforeTheAnswer == ["Thermo-1"])
        #expect(session.mock.calls.started.last?.advertisement.serviceUUIDs == [Improv.serviceUUID])
    }

    @Test("once the Wi-Fi is lost, Improv is offered 30 s later, not sooner")
    func offeredAfterTheDelay() async throws {
        let wifi = Wifi(connected: true)
        let session = try await session(wifi)

        wifi.change.yield(false)
        try await logged("Improv is offered in 30 s", by: session)
        await pass(.seconds(29), in: session)
        let before = session.mock.startAdvertisingCallCount
        await pass(.seconds(1), in: session)
        try await logged("improv: offered", by: session)

        #expect(before == 0)
        #expect(session.mock.startAdvertisingCallCount == 1)
        #expect(session.mock.calls.registeredApplications.count == 1)
    }

    @Test("a drop the Wi-Fi recovers from within 30 s offers nothing")
    func shortDrop() async throws {
        let wifi = Wifi(connected: true)
        let session = try await session(wifi)

        wifi.change.yield(false)
        try await logged("Improv is offered in 30 s", by: session)
        await pass(.seconds(10), in: session)
        wifi.change.yield(true)
        try await logged("improv: this machine's Wi-Fi connected", by: session)
        await pass(.seconds(40), in: session)

        #expect(session.mock.calls.started.isEmpty)
    }

    @Test("the Wi-Fi connecting takes Improv off the air at once")
    func withdrawnWhenConnected() async throws {
        let wifi = Wifi(connected: false)
        let session = try await session(wifi)

        wifi.change.yield(true)
        try await logged("improv: no longer offered", by: session)

        #expect(session.mock.stopAdvertisingCallCount == 1)
        #expect(session.mock.calls.unregisteredApplications.count == 1)
        #expect(session.logs.all.contains { $0.contains("improv: no longer offered: this machine's Wi-Fi is connected") })
    }

    @Test("provisioned, Improv stays on air 30 s for the client to read the result, then leaves")
    func withdrawnAfterProvisioning() async throws {
        let wifi = Wifi(connected: false)
        let session = try await session(wifi)
        let frame = ImprovDaemonTests.wifi

        session.mock.emit(.gatt(GATTEvent(ImprovDaemonTests.command, .written(frame, .bytes(frame)), central: "AA:BB:CC:DD:EE:FF")))
        try await logged("improv: joined", by: session)
        wifi.change.yield(true)
        try await logged("improv: this machine's Wi-Fi connected", by: session)
        await pass(.seconds(29), in: session)
        let before = session.mock.stopAdvertisingCallCount
        await pass(.seconds(1), in: session)
        try await logged("improv: no longer offered: the device was provisioned 30 s ago", by: session)

        #expect(before == 0)
        #expect(session.mock.stopAdvertisingCallCount == 1)
    }

    @Test("a Wi-Fi that cannot be told of at start leaves Improv on air, and told connected later takes it off")
    func toldLate() async throws {
        let wifi = Wifi(connected: true, refusals: 2)
        let session = try await session(wifi)

        let offeredAtStart = session.mock.startAdvertisingCallCount
        await passOnceAsleep(.seconds(15), in: session)
        try await eventually("the Wi-Fi state is asked a second time", every: .milliseconds(1)) { wifi.askedCount >= 2 }
        await passOnceAsleep(.seconds(15), in: session)
        try await logged("improv: no longer offered: this machine's Wi-Fi is connected", by: session)

        #expect(offeredAtStart == 1)
        #expect(wifi.askedCount == 3)
        #expect(session.mock.stopAdvertisingCallCount == 1)
        #expect(session.logs.all.contains { $0.contains("improv: offered until it can be told whether the Wi-Fi is connected") && $0.contains("NetworkManager is starting") })
    }

    @Test("a Wi-Fi never told of leaves Improv on air: asked 9 times over 2 minutes, then no more")
    func neverTold() async throws {
        let wifi = Wifi(connected: true, refusals: 100)
        let session = try await session(wifi)

        for asked in 1...8 {
            try await eventually("the Wi-Fi state is asked again", every: .milliseconds(1)) { wifi.askedCount >= asked }
            await passOnceAsleep(.seconds(15), in: session)
        }
        try await logged("could not be told", by: session)
        await pass(.seconds(60), in: session)

        #expect(wifi.askedCount == 9)
        #expect(session.mock.calls.stopped.isEmpty)
        #expect(session.logs.all.contains { $0.contains("improv: offered whether or not the Wi-Fi is connected, which could not be told") })
    }

    @Test("bleadvctl on with no names, which group bleadvd may run, leaves a withdrawn Improv off the air and puts the others on")
    func onLeavesWithdrawnImprov() async throws {
        let session = try await session(onDBus: true, Wifi(connected: true), extra: "\n[advertisement.beacon]\nlocal_name = \"B\"\nenabled = false\n")

        let result = try await session.ctl("on")

        #expect(result.status == 0, "\(result.errors)")
        #expect(session.mock.calls.started.map(\.advertisement.localName) == ["B"])
    }

    @Test("on improv while Improv is withdrawn is refused, and nothing goes on air")
    func onImprovWhileWithdrawnRefused() async throws {
        let session = try await session(Wifi(connected: true))

        let refusal = await #expect(throws: PeripheralError.self) { try await session.daemon.advertising.on(["improv"]) }

        #expect(refusal?.code == .invalid)
        #expect(refusal?.message.contains("Improv is not offered now") == true, "\(String(describing: refusal))")
        #expect(session.mock.calls.started.isEmpty)
    }

    @Test("an authorization while Improv is off the air is refused")
    func authorizeWhileWithdrawn() async throws {
        let session = try await DaemonSession(config: "[improv]\njoin = \"networkmanager\"\n", joiner: Wifi(connected: true))

        let refusal = await #expect(throws: PeripheralError.self) { try await session.serving((any ImprovControl).self).improvAuthorize("") }

        #expect(refusal?.code == .invalid)
        #expect(refusal?.message.contains("Improv is not on air now") == true, "\(String(describing: refusal))")
    }
}
