package import AdvertiserConfig
package import AdvertiserControl
package import AdvertiserDaemon
package import DBus
package import Events
package import Peripheral
import Synchronization

/// The daemon's bus in this process (its ``ControlBus``), as NIOEmbedded is NIO's channel: no
/// dbus-daemon, an event loop of its own, each signal recorded as it would go out (``Sent``:
/// its member, its destination and its body, which a test decodes back to the signal's payload
/// with ``Sent/decoded(as:)``), whatever the signal; callers' users as the test says, no caller
/// ever leaving, and lost when the test says.
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
    private let signals = Mutex<(sent: [Sent], followers: [AsyncStream<Sent>.Continuation])>(([], []))
    private let served = Mutex<ControlTargets?>(nil)
    private let (losses, losing) = AsyncStream<Void>.makeStream()

    /// A bus on a loop of its own; `users` says who each caller is, `refusal` why the name
    /// cannot be taken (nil: it can).
    package init(users: [String: UInt32] = [:], refusal: DaemonFailure? = nil) throws {
        eventLoop = try EventLoop.onNewThread(name: "embedded-bus")
        self.users = users
        self.refusal = refusal
    }

    /// A signal as the daemon sent it.
    package struct Sent: Sendable, CustomStringConvertible {
        /// Its member name (`StateChanged`).
        package var member: String
        /// The unique name it went to alone; nil for a broadcast.
        package var destination: String?
        /// Its arguments, as D-Bus would carry them.
        package var body: [DBusValue]

        /// Its payload when it is a `Signal`; nil when it is another signal.
        package func decoded<Signal: ControlSignal>(as signal: Signal.Type) -> Signal? {
            member == Signal.name ? Signal(body: body) : nil
        }

        /// `Member [to DESTINATION] arguments`, for a failing test's message.
        package var description: String {
            ([member] + (destination.map { ["to", $0] } ?? []) + body.map { "\($0)" }).joined(separator: " ")
        }
    }

    /// Every signal so far, in the order sent.
    package var all: [Sent] { signals.withLock { $0.sent } }

    /// The signals sent from now on, as ``all`` has them, until the bus goes away.
    package func following() -> AsyncStream<Sent> {
        let (stream, follower) = AsyncStream<Sent>.makeStream()
        signals.withLock { $0.followers.append(follower) }
        return stream
    }

    /// What serves the control API, once the daemon took the name.
    package var targets: ControlTargets? { served.withLock { $0 } }

    /// Ends the connection: the daemon's run fails as it does when the system bus goes.
    package func lose() { losing.yield() }

    /// Records `signal`, to `destination` alone or to everyone.
    package func emit<Signal: ControlSignal>(_ signal: Signal, to destination: String?) async {
        let sent = Sent(member: Signal.name, destination: destination, body: signal.body)
        signals.withLock { signals in
            signals.sent.append(sent)
            for follower in signals.followers { follower.yield(sent) }
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
