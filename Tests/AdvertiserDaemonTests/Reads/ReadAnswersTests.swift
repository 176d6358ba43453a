@testable import AdvertiserDaemon
import AdvertiserConfig
import Events
import Peripheral
import PeripheralMocks
import Synchronization
import TestSupport
import Testing

/// The read programs' component in process: a runner whose programs the test scripts, a port
/// that records, the manual clock. The real runner's processes are ProgramRunnerTests'; a read
/// through the daemon is ServiceTests'.
@Suite("The read programs' component", .timeLimit(.minutes(3)))
struct ReadAnswersTests {
    typealias Component = ReadAnswers<ManualClock>
    static let temperature = GATTCharacteristicID(service: "pi", characteristic: "temperature")
    static let load = GATTCharacteristicID(service: "pi", characteristic: "load")

    /// What a scripted program does when run.
    enum Behaviour: Sendable {
        /// Exits 0 at once, having printed this.
        case prints(String)
        /// Exits with this code at once, having printed this.
        case fails(Int32, String)
        /// Runs until killed.
        case hangs
    }

    /// Runs no process: each program does what the test scripted, and every run and kill is
    /// counted. A program asked to wait (``hold(_:)``) runs until ``release(_:)``.
    final class Runner: ProgramRunning {
        struct State {
            var behaviours: [String: Behaviour] = [:]
            var runs: [String: Int] = [:]
            var killed: [String: Int] = [:]
            var held: Set<String> = []
            var waiting: [String: [AsyncStream<Never>.Continuation]] = [:]
        }

        let state = Mutex(State())

        func script(_ program: String, _ behaviour: Behaviour) { state.withLock { $0.behaviours[program] = behaviour } }
        func runs(_ program: String) -> Int { state.withLock { $0.runs[program] ?? 0 } }
        func killed(_ program: String) -> Int { state.withLock { $0.killed[program] ?? 0 } }
        func hold(_ program: String) { state.withLock { _ = $0.held.insert(program) } }
        func release(_ program: String) {
            let waiting = state.withLock { state in
                state.held.remove(program)
                return state.waiting.removeValue(forKey: program) ?? []
            }
            for gate in waiting { gate.finish() }
        }

        func run(_ command: [String], outputLimit: Int, environment: [String]) async -> ProgramRun {
            let program = command[0]
            let (gate, open) = AsyncStream<Never>.makeStream()
            let (behaviour, held) = state.withLock { state in
                state.runs[program, default: 0] += 1
                if state.held.contains(program) { state.waiting[program, default: []].append(open) }
                return (state.behaviours[program] ?? .fails(127, ""), state.held.contains(program))
            }
            if held {
                // Ends when released, or when the run is cancelled.
                for await _ in gate {}
                if Task.isCancelled { return kill(program) }
            }
            switch behaviour {
            case .prints(let output): return .exited(status: 0, output: Array(output.utf8))
            case .fails(let code, let output): return .exited(status: code << 8, output: Array(output.utf8))
            case .hangs:
                let (never, keep) = AsyncStream<Never>.makeStream()
                for await _ in never {}
                withExtendedLifetime(keep) {}
                return kill(program)
            }
        }

        private func kill(_ program: String) -> ProgramRun {
            state.withLock { $0.killed[program, default: 0] += 1 }
            return .cancelled
        }
    }

    /// What the component reported as fresh, in order.
    final class Port: ReadReporting {
        let fresh = Mutex<[String]>([])
        func fresh(_ id: GATTCharacteristicID, _ value: GATTValue, bytes: [UInt8]) async {
            fresh.withLock { $0.append("\(id)=\(value)") }
        }
        var all: [String] { fresh.withLock { $0 } }
    }

    /// A component over two characteristics: the temperature (`/t`, sint16 in 0.01 °C, kept
    /// 2 s, 3 s to answer, polled every 10 s while subscribed) and the load (`/l`, text).
    struct Harness {
        let runner = Runner()
        let port = Port()
        let clock = ManualClock()
        let logs = LogLines()
        let loop: EventLoop
        let reads: Component

        init() throws {
            loop = try EventLoop.onNewThread(name: "reads-test")
            reads = Component(
                services: Harness.services, port: port, runner: runner, clock: clock, logger: logs.logger(), executor: loop)
        }

        static let services: [String: ConfiguredService] = {
            let temperature = GATTCharacteristic(
                name: "temperature", uuid: BluetoothUUID(0x2A6E), flags: [.read, .notify],
                format: GATTFormat(.sint16, exponent: -2, range: -273.15...327.67), value: [])
            let load = GATTCharacteristic(
                name: "load", uuid: BluetoothUUID(0xFFF1), flags: [.read], format: GATTFormat(.utf8, maximumLength: 32), value: [])
            return ["pi": ConfiguredService(
                service: GATTService(name: "pi", uuid: BluetoothUUID(0xFFF0), characteristics: [temperature, load]), values: [:],
                programs: [
                    "temperature": ReadProgram(command: ["/t"], maxAge: .seconds(2), timeout: .seconds(3), notifyEvery: .seconds(10)),
                    "load": ReadProgram(command: ["/l"]),
                ])]
        }()
    }

    @Test("reads within max_age run the program once, and every one gets its answer")
    func readsWithinMaxAgeShareOneRun() async throws {
        let h = try Harness()
        h.runner.script("/t", .prints("21.5\n"))

        let first = try await h.reads.answer(Self.temperature, central: "A")
        h.clock.advance(by: .milliseconds(1999))
        let second = try await h.reads.answer(Self.temperature, central: "B")

        #expect(first == [0x66, 0x08])  // 2150
        #expect(second == first)
        #expect(h.runner.runs("/t") == 1)
    }

    @Test("a read once max_age passed runs the program again")
    func readAfterMaxAgeRunsAgain() async throws {
        let h = try Harness()
        h.runner.script("/t", .prints("21.5"))
        _ = try await h.reads.answer(Self.temperature, central: "A")
        h.runner.script("/t", .prints("22"))

        h.clock.advance(by: .seconds(2))
        let later = try await h.reads.answer(Self.temperature, central: "A")

        #expect(later == [0x98, 0x08])  // 2200
        #expect(h.runner.runs("/t") == 2)
    }

    @Test("reads that come while the program runs wait for that run: two centrals at once run it once")
    func concurrentReadsShareTheRun() async throws {
        let h = try Harness()
        h.runner.script("/t", .prints("20"))
        h.runner.hold("/t")
        let a = Task { try await h.reads.answer(Self.temperature, central: "A") }
        try await eventually("the first read's run started") { h.runner.runs("/t") == 1 }
        let b = Task { try await h.reads.answer(Self.temperature, central: "B") }

        h.runner.release("/t")

        #expect(try await a.value == [0xD0, 0x07])
        #expect(try await b.value == [0xD0, 0x07])
        #expect(h.runner.runs("/t") == 1)
    }

    @Test("a program past read_timeout is killed and the central gets an error at the timeout, never the older value")
    func timeoutAnswersWithAnError() async throws {
        let h = try Harness()
        h.runner.script("/t", .prints("21.5"))
        _ = try await h.reads.answer(Self.temperature, central: "A")
        h.clock.advance(by: .seconds(2))
        h.runner.script("/t", .hangs)
        let read = Task { () throws(GATTReadError) -> [UInt8] in try await h.reads.answer(Self.temperature, central: "A") }
        try await eventually("the second run started") { h.runner.runs("/t") == 2 }
        try await h.clock.waitForSleepers(1)

        h.clock.advance(by: .seconds(3))

        let error = await #expect(throws: GATTReadError.self) { try await read.value }
        #expect(error?.description == "did not finish within 3.0 seconds; killed")
        #expect(h.runner.killed("/t") == 1)
    }

    @Test("a failing program costs one run per max_age however many reads come: a stranger's flood of 1,000 runs it once")
    func floodCostsOneRunPerMaxAge() async throws {
        let h = try Harness()
        h.runner.script("/t", .fails(1, "sensor busy"))

        var errors = 0
        for _ in 0..<1000 {
            do { _ = try await h.reads.answer(Self.temperature, central: "66:66:66:66:66:66") } catch { errors += 1 }
        }

        #expect(errors == 1000)
        #expect(h.runner.runs("/t") == 1)
    }

    @Test("a program that hangs holds up no other characteristic")
    func hangingProgramHoldsUpNoOther() async throws {
        let h = try Harness()
        h.runner.script("/t", .hangs)
        h.runner.script("/l", .prints("0.42 0.40 0.38\n"))
        let stuck = Task { try? await h.reads.answer(Self.temperature, central: "A") }
        try await eventually("the temperature's run started") { h.runner.runs("/t") == 1 }

        let load = try await h.reads.answer(Self.load, central: "B")

        #expect(load == Array("0.42 0.40 0.38".utf8))
        stuck.cancel()
        h.clock.advance(by: .seconds(3))
        _ = await stuck.value
    }

    @Test("failures in a row are said once in the journal, their end once, and nothing the program printed ever")
    func journalSaysAStreakOnce() async throws {
        let h = try Harness()
        h.runner.script("/t", .fails(2, "SECRET-OUTPUT"))
        for _ in 0..<3 {
            _ = try? await h.reads.answer(Self.temperature, central: "A")
            h.clock.advance(by: .seconds(2))
        }
        h.runner.script("/t", .prints("19.25"))

        _ = try await h.reads.answer(Self.temperature, central: "A")

        #expect(h.logs.all == [
            "warning: pi.temperature: \"/t\" exited 2; centrals reading it get an error (ATT 0x80) until it answers",
            "notice: pi.temperature: \"/t\" answers again, after 3 failed runs",
        ])
    }

    @Test("output that is not a value of the format is an error that names the format, not the output")
    func unfitOutputIsAnError() async throws {
        let h = try Harness()
        h.runner.script("/t", .prints("hot, SECRET\n"))

        let error = await #expect(throws: GATTReadError.self) { try await h.reads.answer(Self.temperature, central: "A") }

        #expect(error?.description == "its output (12 bytes, not shown) is not a number for sint16 (exponent -2, -273.15 to 327.67)")
        #expect(!h.logs.all.joined().contains("SECRET"))
    }

    @Test("each run's value goes to the port once; answers within max_age report nothing")
    func freshValuesReported() async throws {
        let h = try Harness()
        h.runner.script("/t", .prints("21.5"))

        for _ in 0..<5 { _ = try await h.reads.answer(Self.temperature, central: "A") }

        #expect(h.port.all == ["pi.temperature=21.5"])
    }

    @Test("a subscription with notify_every runs the program at once and every period, until the last central unsubscribes")
    func subscriptionPolls() async throws {
        let h = try Harness()
        h.runner.script("/t", .prints("21"))
        await h.reads.take(.subscribed(Self.temperature))
        try await eventually("the first poll ran") { h.runner.runs("/t") == 1 }
        try await h.clock.waitForSleepers(1)

        h.clock.advance(by: .seconds(10))
        try await eventually("the second poll ran") { h.runner.runs("/t") == 2 }
        try await h.clock.waitForSleepers(1)
        await h.reads.take(.unsubscribed(Self.temperature))
        h.clock.advance(by: .seconds(30))

        #expect(h.runner.runs("/t") == 2)
    }

    @Test("a characteristic without notify_every is not polled when a central subscribes")
    func noPollWithoutNotifyEvery() async throws {
        let h = try Harness()
        h.runner.script("/l", .prints("1"))

        await h.reads.take(.subscribed(Self.load))
        h.clock.advance(by: .seconds(60))

        #expect(h.runner.runs("/l") == 0)
    }

    @Test("a reload that changes a program forgets its answer: the next read runs the new one")
    func reloadForgetsChangedAnswers() async throws {
        let h = try Harness()
        h.runner.script("/t", .prints("21"))
        h.runner.script("/t2", .prints("30"))
        _ = try await h.reads.answer(Self.temperature, central: "A")
        var services = Harness.services
        services["pi"]!.programs["temperature"]!.command = ["/t2"]

        await h.reads.reconfigure(services)
        let after = try await h.reads.answer(Self.temperature, central: "A")

        #expect(after == [0xB8, 0x0B])  // 3000
        #expect(h.runner.runs("/t2") == 1)
    }
}
