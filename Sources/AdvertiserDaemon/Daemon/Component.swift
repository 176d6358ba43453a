import AdvertiserConfig
import AdvertiserControl
import Logging
import Peripheral
import Synchronization

/// How a component takes one of BlueZ's events (``DaemonComponent/delivery(of:)``).
enum Delivery<Input: Sendable>: Sendable {
    /// Not this component's.
    case pass
    /// Taken at once, in the router's loop, before the next event reaches anyone: for what must
    /// never wait behind other work (a central's write on its way to the value in force).
    case now(Input)
    /// Taken in turn, through the component's own queue: for what may wait (for the module's
    /// turn with BlueZ, for Improv's answers) without holding up the other components.
    case inTurn(Input)
    /// Taken in turn, and the components after it do not see the event: a write to the
    /// component's own characteristic that is a command, not a value to keep or announce.
    case inTurnAlone(Input)
}

/// A feature of the daemon (advertising, values, pairing, Improv): an actor that owns its whole
/// life. It is made in ``Composition`` with the ports it reports through; it takes its part of
/// each config reloaded (``reconfigure(from:)``), starts in two phases around the enabled
/// advertisements (``start(showing:)`` before them, ``startLast(showing:)`` after), runs its
/// work and timers in ``run()`` (a child of the daemon's task group), takes the BlueZ events it
/// declares (``delivery(of:)``), serves its part of the control API by conforming to it
/// (``ControlTargets``), adds its share to `status` and the systemd status line and to the
/// application served (``contribute(to:)-([String:AdvertisementState])``), and stops in two
/// phases around the unregistering (``stop()`` before, ``putBack()`` after). The daemon loops
/// over the list and names none of them; a ``Router`` hands each event to every one that
/// takes it, in the order of the list and of the bus.
protocol DaemonComponent: Actor {
    /// What it takes from BlueZ's events.
    associatedtype Input: Sendable

    /// What it takes of `event`, and how.
    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<Input>
    /// The most inputs that wait in its queue (nil: no bound). What comes beyond is dropped:
    /// a component whose inputs wait for BlueZ must not cost memory without bound while a
    /// central floods it.
    nonisolated var backlog: Int? { get }
    /// The journal line (a warning) for the first input dropped while the queue is full; the
    /// next one is said only after an input got in again.
    nonisolated func dropped(_ input: Input) -> String
    /// Takes one input.
    func take(_ input: Input) async
    /// Runs its work and timers until cancelled.
    func run() async

    /// Takes its part of a reloaded config, once Values holds the new file's values and the
    /// module its advertisements, before the GATT application is served again (what it marks on
    /// its showing port is served then).
    func reconfigure(from config: DaemonConfig) async
    /// Starts what must be in place before centrals come, once the GATT application is served
    /// and before the enabled advertisements are asked for (the pairing agent): quick, as the
    /// advertisements wait for it. What it shows goes through `stage`.
    func start(showing stage: any Showing) async
    /// Starts what may wait, once everything the config names was asked for (Improv's first
    /// look at the Wi-Fi, which NetworkManager may be slow to answer at boot).
    func startLast(showing stage: any Showing) async
    /// bleadvd is stopping: tells whoever waits on it (a pairing window's opener), first,
    /// before anything is unregistered.
    func stop() async
    /// bleadvd is stopping and everything is unregistered: withdraws and puts back what it
    /// changed outside bleadvd (the pairing agent, the adapter's alias). Stop and put-back run
    /// within the daemon's stop wait, in the order of the list.
    func putBack() async
    /// `states` (each advertisement's and service's, by name) with its share in them: what the
    /// component changes of how they are on air.
    func contribute(to states: [String: AdvertisementState]) async -> [String: AdvertisementState]
    /// `application` (the services offered) with its share in it, each time it is served: the
    /// handlers of the characteristics it answers when read.
    func contribute(to application: GATTApplication) async -> GATTApplication
}

extension DaemonComponent {
    nonisolated var backlog: Int? { nil }
    nonisolated func dropped(_ input: Input) -> String { "dropped an input: \(backlog ?? 0) wait already" }
    func run() async {}
    func reconfigure(from config: DaemonConfig) async {}
    func start(showing stage: any Showing) async {}
    func startLast(showing stage: any Showing) async {}
    func stop() async {}
    func putBack() async {}
    func contribute(to states: [String: AdvertisementState]) async -> [String: AdvertisementState] { states }
    func contribute(to application: GATTApplication) async -> GATTApplication { application }
}

/// Hands BlueZ's events to the components: each takes what its ``DaemonComponent/delivery(of:)``
/// says, at once or through a queue of its own drained by a child of the daemon's task group, so
/// that a component waiting (on the module's turn with BlueZ, say) holds up no other.
struct Router: Sendable {
    private var routes: [@Sendable (PeripheralEvent) async -> Bool] = []
    private var queues: [@Sendable () -> Void] = []

    /// Adds `component`, after those added before: its queue's drain and its ``DaemonComponent/run()``
    /// become children of `group`.
    mutating func add<Component: DaemonComponent>(_ component: Component, in group: inout DiscardingTaskGroup, logger: Logger) {
        let (inputs, queue) = AsyncStream<Component.Input>.makeStream(
            bufferingPolicy: component.backlog.map { .bufferingOldest($0) } ?? .unbounded)
        group.addTask { for await input in inputs { await component.take(input) } }
        group.addTask { await component.run() }
        let dropping = DropStreak()
        routes.append { event in
            // Whether the components after this one see it.
            func enqueue(_ input: Component.Input) {
                switch queue.yield(input) {
                case .dropped: if dropping.begins() { logger.warning("\(component.dropped(input))") }
                case .enqueued: dropping.end()
                default: break
                }
            }
            switch component.delivery(of: event) {
            case .pass: return true
            case .now(let input): await component.take(input)
            case .inTurn(let input): enqueue(input)
            case .inTurnAlone(let input):
                enqueue(input)
                return false
            }
            return true
        }
        queues.append { queue.finish() }
    }

    /// Hands `event` to each component in turn, until one takes it alone.
    func route(_ event: PeripheralEvent) async {
        for route in routes {
            guard await route(event) else { return }
        }
    }

    /// Ends every queue: each component takes what waits in it, and its drain returns.
    func finish() {
        for finish in queues { finish() }
    }
}

/// Whether a queue is dropping inputs since the last one got in.
private final class DropStreak: Sendable {
    private let dropping = Mutex(false)

    /// A drop: true for the first of a streak.
    func begins() -> Bool {
        dropping.withLock { dropping in
            defer { dropping = true }
            return !dropping
        }
    }

    /// An input got in: the next drop begins a streak.
    func end() { dropping.withLock { $0 = false } }
}
