#if canImport(Glibc)
import Glibc
#endif
import AdvertiserConfig
import Events
import Logging
import Peripheral

/// Where a TLM advertisement is, as its port says.
enum TelemetryAir: Hashable, Sendable {
    /// On air for this long, since it last went on air.
    case on(Duration)
    /// Wanted on air, not there yet (registering, waiting for an adapter).
    case coming
    /// Turned off.
    case off
}

/// The telemetry component's port: where a TLM frame's counters go on air (``Values``).
protocol TelemetryShowing: AnyObject, Sendable {
    /// Where advertisement `name` is.
    func air(_ name: String) async -> TelemetryAir
    /// Puts `counters` in advertisement `name`'s TLM frame, with the values in force.
    func show(counters: EddystoneTLM.Counters, in name: String) async
}

/// Eddystone-TLM's counters (#68), a component of the daemon: each advertisement of the
/// `eddystone_tlm` preset has the counters of its frame brought up to date on air at once and
/// then every `update_seconds` (10 unless the config says), through its port:
/// - SEC_CNT, the time since the system booted, in tenths of a second;
/// - ADV_CNT, an estimate of the advertising frames sent: the time the advertisement has been
///   on air since it last went on air over ``interval``, the kernel's advertising interval
///   when none is asked for (a preset asks for none). On a controller without extended
///   advertising the kernel sends one advertisement at a time, so this counts the frames of
///   every kind the adapter sent meanwhile, as the spec's ADV_CNT does; with extended
///   advertising each set sends at its own interval, and it counts the TLM set's alone.
///
/// One that is not on air is not updated: one on its way there is looked at again a second
/// later, one turned off at its next update. It owns one timer, for the earliest update due, on
/// the injected clock.
actor Telemetry<C: Clock> where C.Duration == Duration {
    /// The kernel's advertising interval when none is asked for: 0x0800 slots of 0.625 ms
    /// (`le_adv_min_interval` and `le_adv_max_interval` of every adapter).
    static var interval: Duration { .milliseconds(1280) }

    /// How soon an advertisement on its way to the air is looked at again.
    static var retry: Duration { .seconds(1) }

    /// One TLM advertisement's updates.
    struct Beacon: Hashable, Sendable {
        /// How often its counters are brought up to date.
        var every: Duration
        /// Its next update.
        var next: C.Instant
    }

    let port: any TelemetryShowing
    let clock: C
    let logger: Logger
    nonisolated let executor: EventLoop
    /// The time since the system booted, at ``started``.
    let uptimeAtStart: Duration
    /// When the component was made.
    let started: C.Instant
    /// The TLM advertisements, by name.
    private(set) var beacons: [String: Beacon] = [:]
    /// The timer: one task, sleeping until the earliest update due.
    private var timer: Task<Void, Never>?

    /// The component for the TLM advertisements among `advertisements`; `uptime` is the time
    /// since the system booted (``systemUptime()`` in bleadvd).
    init(
        advertisements: [String: ConfiguredAdvertisement], port: any TelemetryShowing, clock: C, uptime: Duration, logger: Logger,
        executor: EventLoop
    ) {
        self.port = port
        self.clock = clock
        self.logger = logger
        self.executor = executor
        uptimeAtStart = uptime
        let now = clock.now
        started = now
        beacons = advertisements.compactMapValues { configured in
            configured.telemetry.map { Beacon(every: $0.every, next: now) }
        }
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The time since the system booted (`CLOCK_BOOTTIME`, which counts a suspend too).
    static func systemUptime() -> Duration {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }

    /// The counters at `now` of an advertisement on air for `onAir`.
    func counters(at now: C.Instant, onAir: Duration) -> EddystoneTLM.Counters {
        let uptime = uptimeAtStart + started.duration(to: now)
        return EddystoneTLM.Counters(
            advertisingCount: UInt32(clamping: Int64((onAir / Self.interval).rounded(.down))),
            uptimeTenths: UInt32(clamping: Int64((uptime / .milliseconds(100)).rounded(.down))))
    }

    /// A reload's advertisements: a new TLM advertisement is brought up to date at once, as is
    /// one whose period changed; the others keep their timers.
    func reconfigure(from config: DaemonConfig) {
        reconfigure(config.advertisements)
    }

    func reconfigure(_ advertisements: [String: ConfiguredAdvertisement]) {
        let now = clock.now
        beacons = advertisements.reduce(into: [:]) { next, entry in
            guard let every = entry.value.telemetry?.every else { return }
            var beacon = beacons[entry.key] ?? Beacon(every: every, next: now)
            if beacon.every != every {
                beacon.every = every
                beacon.next = now
            }
            next[entry.key] = beacon
        }
        arm()
    }

    /// Brings each TLM advertisement whose update is due on air, then arms the timer for the
    /// next.
    func update() async {
        timer = nil
        let now = clock.now
        for name in beacons.keys.sorted() {
            // A reload during an update may have removed one.
            guard let beacon = beacons[name], beacon.next <= now else { continue }
            let onAir: Duration
            switch await port.air(name) {
            case .on(let duration):
                onAir = duration
            case .coming:
                beacons[name]?.next = now.advanced(by: min(beacon.every, Self.retry))
                continue
            case .off:
                beacons[name]?.next = now.advanced(by: beacon.every)
                continue
            }
            beacons[name]?.next = now.advanced(by: beacon.every)
            let counters = counters(at: now, onAir: onAir)
            logger.debug("\(name): TLM advertising count \(counters.advertisingCount), uptime \(counters.uptimeTenths) tenths of a second")
            await port.show(counters: counters, in: name)
        }
        arm()
    }

    /// Keeps one timer armed for the earliest update due.
    private func arm() {
        timer?.cancel()
        timer = nil
        guard let due = beacons.values.map(\.next).min() else { return }
        timer = Task(executorPreference: executor) { [clock] in
            guard (try? await clock.sleep(until: due, tolerance: nil)) != nil else { return }
            await self.update()
        }
    }

    /// Arms the timer (the first updates are due at once), waits until cancelled (the daemon
    /// stops), then stops it.
    func run() async {
        arm()
        let (never, keep) = AsyncStream<Never>.makeStream()
        for await _ in never {}
        withExtendedLifetime(keep) {}
        timer?.cancel()
    }
}

/// The telemetry component takes none of BlueZ's events: its inputs are the clock and reloads.
extension Telemetry: DaemonComponent {
    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<Never> { .pass }
    func take(_ input: Never) async {}
}
