import AdvertiserControl
import Logging
import Peripheral

/// What an event is sent with: the sensor as configured now, how long an event's packets stay
/// on air, and whether its readings are for its key's holders alone.
struct EventTarget: Sendable {
    var sensor: BTHome
    var burst: Duration
    var encrypted: Bool
}

/// The events component's port: where an event goes into a sensor's packets (``Values``).
protocol EventShowing: AnyObject, Sendable {
    /// The sensor `name` as events are sent to it now.
    /// - Throws: `PeripheralError` when it is no sensor with buttons or dimmers, or is off.
    func sensor(_ name: String) async throws(PeripheralError) -> EventTarget
    /// Puts `event` in `name`'s packets at once with a new packet id, with the values in force;
    /// nil: the values alone again, with a new one.
    func show(event: BTHome.Event?, in name: String) async throws(PeripheralError)
}

/// BTHome events (#68), a component of the daemon: `bleadvctl event kitchen button=long_press`
/// puts the event in the sensor's packets at once, with one packet id for its burst
/// (`event_seconds`, 1 s unless the config says), so that a receiver that hears several of them
/// reports it once; then the packets carry the measurements alone again, with a new id.
///
/// Events given while one is on air wait in order, each sent for a whole burst: none is merged
/// with another (a packet changed during a burst needs a new id, and receivers would report
/// the first event again) nor dropped. At most ``waitingLimit`` wait per sensor; one more is
/// refused, saying so. It owns its queues and its timer (a burst per sensor, a child of its
/// ``run()``), and reports through its port alone.
actor BTHomeEvents<C: Clock>: EventsControl where C.Duration == Duration {
    /// The most events that wait behind the one on air, per sensor.
    static var waitingLimit: Int { 32 }

    let port: any EventShowing
    let clock: C
    let logger: Logger
    nonisolated let executor: any SerialExecutor
    /// Each sensor's events not yet on air, oldest first.
    var waiting: [String: [BTHome.Event]] = [:]
    /// The sensors whose burst runs now.
    var bursting: Set<String> = []
    /// Bursts to start, which ``run()`` starts.
    let starts: AsyncStream<String>
    let post: AsyncStream<String>.Continuation

    init(port: any EventShowing, clock: C, logger: Logger, executor: any SerialExecutor) {
        self.port = port
        self.clock = clock
        self.logger = logger
        self.executor = executor
        (starts, post) = AsyncStream<String>.makeStream()
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    // MARK: EventsControl

    func event(_ name: String, _ given: [String: String]) async throws(PeripheralError) -> EventQueued {
        let target = try await port.sensor(name)
        let event = try target.sensor.event(from: given)
        let ahead = (waiting[name]?.count ?? 0) + (bursting.contains(name) ? 1 : 0)
        guard ahead <= Self.waitingLimit else {
            throw PeripheralError(.invalidValue, "\(name): \(ahead) events wait already (each is on air for \(target.burst)); try again once they went")
        }
        waiting[name, default: []].append(event)
        // An encrypted sensor's events are for those who hold its key, as its readings are.
        logger.info("\(name): event \(target.encrypted ? "(encrypted: not shown)" : event.description)\(ahead > 0 ? ", after \(ahead) waiting" : "")")
        if bursting.insert(name).inserted { post.yield(name) }
        return EventQueued(ahead: ahead, burstSeconds: target.burst.inSeconds)
    }

    // MARK: Bursts

    /// Starts each burst asked for, a child of its task group; returns when cancelled.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await name in starts {
                group.addTask { await self.burst(name) }
            }
        }
    }

    /// Sends `name`'s waiting events one after another, each for its burst, then its values
    /// alone. Runs as a child of ``run()``.
    func burst(_ name: String) async {
        defer { bursting.remove(name) }
        while true {
            while let event = waiting[name]?.first {
                waiting[name]!.removeFirst()
                do {
                    let burst = try await port.sensor(name).burst
                    try await port.show(event: event, in: name)
                    guard (try? await clock.sleep(for: burst)) != nil else { return }
                } catch {
                    logger.warning("\(name): an event did not go on air: \(error.message)")
                }
            }
            do {
                try await port.show(event: nil, in: name)
            } catch {
                logger.warning("\(name): after its event, the values alone did not reach BlueZ: \(error.message)")
            }
            // An event given while the values went back waits: its burst follows.
            guard waiting[name]?.isEmpty == false else {
                waiting[name] = nil
                return
            }
        }
    }
}

/// The events component takes none of BlueZ's events: its inputs are control calls.
extension BTHomeEvents: DaemonComponent {
    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<Never> { .pass }
    func take(_ input: Never) async {}
}
