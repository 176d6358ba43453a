import AdvertiserConfig
import Events
import Logging
import Peripheral

/// Where the values read programs give are reported: they become the values in force (what
/// `status` shows, what subscribed centrals are notified of when it changed). ``Values`` is it.
protocol ReadReporting: AnyObject, Sendable {
    /// `id`'s program gave `value` (on air: `bytes`).
    func fresh(_ id: GATTCharacteristicID, _ value: GATTValue, bytes: [UInt8]) async
}

/// The characteristics whose values are read from a program when a central asks (`read =` in
/// the config), a component of the daemon: it answers the stack's reads
/// (``GATTReadAnswering``), runs each program at most once at a time (reads that come while it
/// runs share its answer) and at most once per `max_age` (reads within it get the last answer,
/// a failure included), kills a run past `read_timeout` and answers the central with an error,
/// never with an older value; it polls a subscribed characteristic every `notify_every`. A
/// program's output reaches the central and the port, never the journal.
actor ReadAnswers<C: Clock>: GATTReadAnswering where C.Duration == Duration {
    /// The most a program may print: a value is at most 512 bytes, and 512 as hex digits 1,024.
    static var outputLimit: Int { 4096 }

    /// One characteristic's program, as configured.
    struct Entry: Hashable, Sendable {
        var program: ReadProgram
        var format: GATTFormat
    }

    /// An answer and when it was made.
    struct Answer: Sendable {
        var outcome: Result<[UInt8], GATTReadError>
        var at: C.Instant
    }

    let runner: any ProgramRunning
    let clock: C
    let logger: Logger
    nonisolated let executor: EventLoop
    /// Where fresh values go.
    let port: any ReadReporting
    /// The programs, by characteristic.
    private(set) var entries: [GATTCharacteristicID: Entry]
    /// The last answer of each, while it may serve.
    private var answers: [GATTCharacteristicID: Answer] = [:]
    /// The runs under way: reads that come meanwhile wait for it.
    private var runs: [GATTCharacteristicID: Task<Result<[UInt8], GATTReadError>, Never>] = [:]
    /// How many runs failed in a row, by characteristic: the first says so in the journal, the
    /// next success says how many there were.
    private var failures: [GATTCharacteristicID: Int] = [:]
    /// The polls of the subscribed characteristics with `notify_every`.
    private var polls: [GATTCharacteristicID: Task<Void, Never>] = [:]

    /// The programs of `services`, reporting to `port`, run by `runner` (nil: as bleadvd's
    /// children, looked at on `executor`'s timers and reaped there), timed on `clock`.
    init(
        services: [String: ConfiguredService], port: any ReadReporting, runner: (any ProgramRunning)? = nil, clock: C,
        logger: Logger, executor: EventLoop
    ) {
        self.entries = Self.entries(services)
        self.port = port
        self.runner = runner ?? ProgramRunner(clock: LoopClock(on: executor), executor: executor)
        self.clock = clock
        self.logger = logger
        self.executor = executor
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The programs of `services`, by characteristic.
    static func entries(_ services: [String: ConfiguredService]) -> [GATTCharacteristicID: Entry] {
        var entries: [GATTCharacteristicID: Entry] = [:]
        for (name, service) in services {
            for characteristic in service.service.characteristics {
                guard let program = service.programs[characteristic.name] else { continue }
                entries[GATTCharacteristicID(service: name, characteristic: characteristic.name)] = Entry(program: program, format: characteristic.format)
            }
        }
        return entries
    }

    // MARK: Answers

    nonisolated func answer(_ id: GATTCharacteristicID, central: String) async throws(GATTReadError) -> [UInt8] {
        try await ask(id).get()
    }

    /// The answer for `id`: the last one while younger than its `max_age`, else the run under
    /// way's, else a new run's.
    func ask(_ id: GATTCharacteristicID) async -> Result<[UInt8], GATTReadError> {
        guard let entry = entries[id] else { return .failure(GATTReadError("\(id) is not read from a program")) }
        if let answer = answers[id], answer.at.duration(to: clock.now) < entry.program.maxAge { return answer.outcome }
        if let run = runs[id] { return await run.value }
        let run = Task(executorPreference: executor) { await self.run(id, entry) }
        runs[id] = run
        return await run.value
    }

    /// Runs `id`'s program once, within its timeout, and keeps, reports and says what came of it.
    private func run(_ id: GATTCharacteristicID, _ entry: Entry) async -> Result<[UInt8], GATTReadError> {
        let outcome: Result<(GATTValue, [UInt8]), GATTReadError>
        do throws(GATTReadError) {
            outcome = .success(try await value(entry))
        } catch {
            outcome = .failure(error)
        }
        runs[id] = nil
        // A reload changed the program meanwhile: this answer is the old one's, kept by no one.
        guard entries[id] == entry else { return outcome.map(\.1) }
        answers[id] = Answer(outcome: outcome.map(\.1), at: clock.now)
        let program = Untrusted.quoted(entry.program.command[0], limit: 64)
        switch outcome {
        case .success(let (value, bytes)):
            if let failed = failures.removeValue(forKey: id) {
                logger.notice("\(id): \(program) answers again, after \(failed) failed run\(failed == 1 ? "" : "s")")
            }
            await port.fresh(id, value, bytes: bytes)
        case .failure(let error):
            failures[id, default: 0] += 1
            if failures[id] == 1 {
                logger.warning("\(id): \(program) \(error); centrals reading it get an error (ATT 0x80) until it answers")
            }
        }
        return outcome.map(\.1)
    }

    /// The value `entry`'s program gives, killed past its timeout.
    private func value(_ entry: Entry) async throws(GATTReadError) -> (GATTValue, [UInt8]) {
        let (runner, clock, command) = (runner, clock, entry.program.command)
        let ran: ProgramRun? = await withTaskGroup(of: ProgramRun?.self) { group in
            group.addTask { await runner.run(command, outputLimit: Self.outputLimit, environment: []) }
            group.addTask {
                try? await clock.sleep(for: entry.program.timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        switch ran {
        case .exited(let status, let output):
            let signal = status & 0x7F, code = (status >> 8) & 0xFF
            guard signal == 0 else { throw GATTReadError("was killed by signal \(signal)") }
            guard code == 0 else { throw GATTReadError("exited \(code)") }
            return try ReadProgram.value(of: output, format: entry.format)
        case .overflowed: throw GATTReadError("printed more than \(Self.outputLimit) bytes; killed")
        case .unstartable(let reason): throw GATTReadError("cannot be run: \(reason)")
        case .cancelled, nil: throw GATTReadError("did not finish within \(entry.program.timeout); killed")
        }
    }

    // MARK: Polls

    /// A central subscribed to `id`: with `notify_every`, its program runs now and then every
    /// so often while any central is subscribed.
    func subscribed(_ id: GATTCharacteristicID) {
        guard let every = entries[id]?.program.notifyEvery, polls[id] == nil else { return }
        polls[id] = Task(executorPreference: executor) { [clock] in
            repeat {
                _ = await self.ask(id)
            } while (try? await clock.sleep(for: every)) != nil
        }
    }

    /// The last central unsubscribed from `id` (or bluetoothd left): its poll ends.
    func unsubscribed(_ id: GATTCharacteristicID) {
        polls.removeValue(forKey: id)?.cancel()
    }

    /// Its share in the application served: it answers the reads of each characteristic with
    /// a program.
    func contribute(to application: GATTApplication) -> GATTApplication {
        var application = application
        for id in entries.keys where application[id] != nil { application[id]!.onRead = GATTReadHandler(self) }
        return application
    }

    /// Its part of a reloaded config: the services' read programs.
    func reconfigure(from config: DaemonConfig) {
        reconfigure(config.services)
    }

    /// Takes a reloaded file's programs: a characteristic whose program or format changed
    /// starts afresh (no answer kept, no poll).
    func reconfigure(_ services: [String: ConfiguredService]) {
        let new = Self.entries(services)
        for (id, entry) in entries where new[id] != entry {
            answers[id] = nil
            failures[id] = nil
            unsubscribed(id)
        }
        entries = new
    }

    /// Ends every poll (bleadvd stops, bluetoothd left).
    func endPolls() {
        for id in Array(polls.keys) { unsubscribed(id) }
    }

    /// Waits until cancelled (the daemon stops), then ends every poll.
    func run() async {
        let (never, keep) = AsyncStream<Never>.makeStream()
        for await _ in never {}
        withExtendedLifetime(keep) {}
        endPolls()
    }
}

/// What it takes of BlueZ's events: subscriptions to its characteristics, and bluetoothd's
/// leaving (which ends them all).
extension ReadAnswers: DaemonComponent {
    enum Input: Sendable {
        case subscribed(GATTCharacteristicID)
        case unsubscribed(GATTCharacteristicID)
        case allGone
    }

    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<Input> {
        switch event {
        case .gatt(let gatt):
            switch gatt.kind {
            case .subscribed: .inTurn(.subscribed(gatt.characteristic))
            case .unsubscribed: .inTurn(.unsubscribed(gatt.characteristic))
            default: .pass
            }
        case .bluezVanished: .inTurn(.allGone)
        default: .pass
        }
    }

    func take(_ input: Input) async {
        switch input {
        case .subscribed(let id): subscribed(id)
        case .unsubscribed(let id): unsubscribed(id)
        case .allGone: endPolls()
        }
    }
}

/// Values takes what read programs give as the values in force: status shows them, and a
/// changed one goes to BlueZ (subscribed centrals are notified) as a value set does.
extension Values: ReadReporting {
    func fresh(_ id: GATTCharacteristicID, _ value: GATTValue, bytes: [UInt8]) {
        guard var service = services[id.service]?.live else { return }
        service.store(value, bytes: bytes, for: id.characteristic)
        if services[id.service]!.set(service) { post.yield(.send(.service(id.service))) }
    }
}
