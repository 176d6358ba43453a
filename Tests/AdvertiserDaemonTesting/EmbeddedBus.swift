package import AdvertiserConfig
package import AdvertiserControl
package import AdvertiserDaemon
package import Events
package import Peripheral
import Synchronization

/// The daemon's bus in this process (its ``ControlBus``), as NIOEmbedded is NIO's channel: no
/// dbus-daemon, an event loop of its own, each signal recorded as a line
/// (`StateChanged heart on`, `ValuesChanged lamp [to :1.7] key=value...`,
/// `Written lamp.mode [to :1.7] VALUE`, `Pairing opened to :1.7`), callers' users as the test
/// says, no caller ever leaving, and lost when the test says.
///
/// What only a real bus proves (its policy, marshalling, activation, `bleadvctl` end to end)
/// stays with a private dbus-daemon (TestSupport's `PrivateBus`).
package final class EmbeddedBus: ControlBus {
    package let eventLoop: EventLoop
    /// The user of each caller (a unique name); a caller not listed has none the bus can tell.
    let users: [String: UInt32]
    /// Why serving fails (another bleadvd owns the name, say); nil: it serves.
    let refusal: DaemonFailure?
    /// The signals sent so far, and the streams that follow the next ones.
    private let signals = Mutex<(lines: [String], followers: [AsyncStream<String>.Continuation])>(([], []))
    private let served = Mutex<ControlTargets?>(nil)
    private let (losses, losing) = AsyncStream<Void>.makeStream()

    /// A bus on a loop of its own; `users` says who each caller is, `refusal` why the name
    /// cannot be taken (nil: it can).
    package init(users: [String: UInt32] = [:], refusal: DaemonFailure? = nil) throws {
        eventLoop = try EventLoop.onNewThread(name: "embedded-bus")
        self.users = users
        self.refusal = refusal
    }

    /// Every signal so far, one line each, in the order sent.
    package var all: [String] { signals.withLock { $0.lines } }

    /// The signals sent from now on, one line each as ``all`` has them, until the bus goes away.
    package func lines() -> AsyncStream<String> {
        let (stream, follower) = AsyncStream<String>.makeStream()
        signals.withLock { $0.followers.append(follower) }
        return stream
    }

    /// What serves the control API, once the daemon took the name.
    package var targets: ControlTargets? { served.withLock { $0 } }

    /// Ends the connection: the daemon's run fails as it does when the system bus goes.
    package func lose() { losing.yield() }

    private func record(_ line: String) {
        signals.withLock { signals in
            signals.lines.append(line)
            for follower in signals.followers { follower.yield(line) }
        }
    }

    deinit {
        signals.withLock { $0.followers.forEach { $0.finish() } }
    }

    package func serve(_ targets: ControlTargets) async throws(DaemonFailure) {
        if let refusal { throw refusal }
        served.withLock { $0 = targets }
    }

    package func lost() async {
        for await _ in losses { return }
    }

    package func ownsName() async -> Bool { targets != nil }
    package func user(of caller: String) async -> UInt32? { users[caller] }
    /// No caller leaves: a subscriber stays until the daemon stops.
    package func departure(of caller: String) async {
        while (try? await Task.sleep(for: .seconds(60))) != nil {}
    }

    package func stateChanged(_ name: String, _ state: AdvertisementState.State) async {
        record("StateChanged \(name) \(state.rawValue)")
    }

    package func valuesChanged(_ name: String, _ values: [String: String], to subscriber: String?) async {
        let shown = values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        record((["ValuesChanged", name] + (subscriber.map { ["to", $0] } ?? []) + shown).joined(separator: " "))
    }

    package func written(_ id: GATTCharacteristicID, _ value: GATTValue?, central: String, to subscriber: String?) async {
        record((["Written", "\(id)"] + (subscriber.map { ["to", $0] } ?? []) + [value.map(\.description) ?? "(not shown)"]).joined(separator: " "))
    }

    package func pairing(_ event: String, central: String, detail: String, to opener: String) async {
        record("Pairing \(event) to \(opener)")
    }

    package func linked(_ central: String, adapter: String, ended reason: String?) async {
        record((reason.map { ["Disconnected", central, adapter] + ($0.isEmpty ? [] : [$0]) } ?? ["Connected", central, adapter]).joined(separator: " "))
    }

    package func linkChanged(_ central: String, adapter: String, mtu: Int, cut: [String]) async {
        record((["LinkChanged", central, adapter, "\(mtu)"] + cut).joined(separator: " "))
    }

    package func subscription(_ id: GATTCharacteristicID, subscribed: Bool) async {
        record("Subscription \(id) \(subscribed)")
    }

    /// The config's join program, as on the system bus; NetworkManager, which is on no bus
    /// here, can neither join nor tell (``Refusing``): Improv is offered whatever the Wi-Fi.
    package func joiner<C: Clock>(for config: ImprovConfig, clock: C) -> any NetworkJoining where C.Duration == Duration {
        switch config.joiner {
        case .program(let program): ProgramJoiner(program: program, clock: clock, executor: eventLoop)
        case .networkManager: Refusing()
        }
    }

    /// A joiner that can neither join nor tell.
    package struct Refusing: NetworkJoining {
        struct Refused: Error {}
        package init() {}
        package func join(_ credentials: Improv.Credentials) async throws -> String? { throw Refused() }
        package func networks() async throws -> [Improv.Network] { throw Refused() }
        package func wifi() async throws -> WifiWatch? { nil }
    }
}
