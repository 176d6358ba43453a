import AdvertiserDaemon
import DBus
import Foundation
import Logging
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// bleadvd's joins through the join helper (`org.bleadvd.Join`), over a private bus: the helper
/// side is `JoinHelper.serve` with a joiner that records what it was given, the daemon's side
/// the `HelperJoiner` bleadvd uses when it runs as its own user.
@Suite("The Improv join helper", .timeLimit(.minutes(3)))
struct JoinHelperTests {
    /// A joiner that records the credentials it was given and answers as told.
    final class Joiner: NetworkJoining, @unchecked Sendable {
        let answer: Result<String?, NetworkManagerFailure>
        private let lock = NSLock()
        private var given: [Improv.Credentials] = []

        init(_ answer: Result<String?, NetworkManagerFailure>) { self.answer = answer }

        var joined: [Improv.Credentials] { lock.withLock { given } }

        func join(_ credentials: Improv.Credentials) async throws -> String? {
            lock.withLock { given.append(credentials) }
            return try answer.get()
        }
        func networks() async throws -> [Improv.Network] { [] }
        func wifi() async throws -> WifiWatch? { nil }
    }

    struct NetworkManagerFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// The helper serving `joiner` on its own connection to `bus` (until one join or its idle
    /// time), and a `HelperJoiner` on another.
    /// It joins for this process's user (as bleadvd's), unless `accepting` says otherwise.
    static func helper(
        _ joiner: any NetworkJoining, on bus: PrivateBus, clock: ManualClock = ManualClock(), accepting: @escaping @Sendable (UInt32) -> Bool = { $0 == getuid() },
        logs: LogLines = LogLines()
    ) async throws -> (HelperJoiner<ManualClock>, Task<Void, any Error>) {
        let helperSide = try await DBusConnection.connect(to: .address(bus.address))
        let served = Task { try await JoinHelper.serve(on: helperSide, joiner: joiner, clock: clock, logger: logs.logger(), accepts: accepting) }
        let bleadvdSide = try await DBusConnection.connect(to: .address(bus.address))
        // The name is taken last, once the helper answers.
        try await eventually("the join helper owns its name") { try await bleadvdSide.nameOwner(JoinHelper.busName) != nil }
        return (HelperJoiner(connection: bleadvdSide, clock: clock), served)
    }

    static let home = Improv.Credentials(ssid: Array("Home".utf8), password: Array("hunter22".utf8))!

    @Test("a join reaches the helper's joiner with the SSID and password as sent, and the address it got comes back")
    func joinReachesTheHelper() async throws {
        let bus = try await PrivateBus()
        let joiner = Joiner(.success("192.168.4.2"))
        let (helperJoiner, _) = try await Self.helper(joiner, on: bus)

        let address = try await helperJoiner.join(Self.home)

        #expect(address == "192.168.4.2")
        #expect(joiner.joined == [Self.home])
    }

    @Test("a join the helper could not make fails with the helper's reason, as a join through NetworkManager would")
    func failureComesBack() async throws {
        let bus = try await PrivateBus()
        let joiner = Joiner(.failure(NetworkManagerFailure(description: "NetworkManager could not connect: no network of that name in range")))
        let (helperJoiner, _) = try await Self.helper(joiner, on: bus)

        let error = await #expect(throws: (any Error).self) { try await helperJoiner.join(Self.home) }

        #expect("\(error!)" == "NetworkManager could not connect: no network of that name in range")
    }

    @Test(
        "the helper refuses what are no credentials before its joiner is asked, whoever calls",
        arguments: [
            (Array(repeating: UInt8(0x41), count: 33), [UInt8](), "an SSID is 1 to 32 bytes"), ([], [], "an SSID is 1 to 32 bytes"),
            (Array("Home".utf8), Array("x\"\rremove_network 0\rsave_config ".utf8), "a WPA password is 8 to 63 printable ASCII characters"),
        ])
    func credentialsRefused(ssid: [UInt8], password: [UInt8], reason: String) async throws {
        let bus = try await PrivateBus()
        let joiner = Joiner(.success(nil))
        _ = try await Self.helper(joiner, on: bus)
        let caller = try await DBusConnection.connect(to: .address(bus.address))

        let error = await #expect(throws: DBusError.self) {
            try await caller.call(
                destination: JoinHelper.busName, path: JoinHelper.path, interface: JoinHelper.interface, member: "Join",
                [.bytes(ssid), .bytes(password)], expecting: "s")
        }

        #expect(error?.name == .invalidArgs)
        #expect(error?.message.contains(reason) == true, "\(error.map { "\($0)" } ?? "")")
        #expect(joiner.joined.isEmpty)
    }

    @Test("the helper serves one join and ends")
    func helperEndsAfterAJoin() async throws {
        let bus = try await PrivateBus()
        let (helperJoiner, served) = try await Self.helper(Joiner(.success(nil)), on: bus)

        _ = try await helperJoiner.join(Self.home)

        try await served.value
    }

    @Test("a Join from a user who is not bleadvd's is refused with AccessDenied, NetworkManager is asked nothing, and the helper ends at once")
    func strangerRefused() async throws {
        let bus = try await PrivateBus()
        let joiner = Joiner(.success(nil))
        let (helperJoiner, served) = try await Self.helper(joiner, on: bus, accepting: { _ in false })

        let refusal = await #expect(throws: (any Error).self) { _ = try await helperJoiner.join(Self.home) }
        try await served.value

        #expect("\(String(describing: refusal))".contains("for bleadvd's own user alone"))
        #expect(joiner.joined.isEmpty)
    }

    /// A joiner whose join lasts until the test ends it, as NetworkManager's can for a minute.
    final class SlowJoiner: NetworkJoining, Sendable {
        let started: AsyncStream<Void>, start: AsyncStream<Void>.Continuation
        let ends: AsyncStream<Void>, end: AsyncStream<Void>.Continuation
        init() {
            (started, start) = AsyncStream.makeStream()
            (ends, end) = AsyncStream.makeStream()
        }
        func join(_ credentials: Improv.Credentials) async throws -> String? {
            start.yield()
            for await _ in ends { break }
            return "192.168.4.2"
        }
        func networks() async throws -> [Improv.Network] { [] }
        func wifi() async throws -> WifiWatch? { nil }
    }

    @Test("a join that lasts longer than the helper's idle time is served to its end: the idle time ends with the call's arrival, not its answer (the process ends when serve returns: bleadvd got NoReply while NetworkManager joined, 66 on Debian 12)")
    func slowJoinServed() async throws {
        let clock = ManualClock()
        let joiner = SlowJoiner()
        let logs = LogLines()
        let bus = try await PrivateBus()
        let (helperJoiner, served) = try await Self.helper(joiner, on: bus, clock: clock, logs: logs)
        let joining = Task { try await helperJoiner.join(Self.home) }
        for await _ in joiner.started { break }

        clock.advance(by: JoinHelper.idle * 3)
        joiner.end.yield()
        let address = try await joining.value
        try await served.value

        #expect(address == "192.168.4.2")
        #expect(!logs.all.contains { $0.contains("no join asked") }, "\(logs.all)")
    }

    @Test("a helper nobody asks ends after its idle time")
    func helperEndsUnasked() async throws {
        let clock = ManualClock()
        let (_, served) = try await Self.helper(Joiner(.success(nil)), on: try await PrivateBus(), clock: clock)

        await clock.waitForSleepers(1)
        clock.advance(by: JoinHelper.idle)

        try await served.value
    }
}
