import CDBusBenchLoop
import DBus
import Events

#if canImport(Glibc)
import Glibc
#endif

/// `make bench-dbus`: round trips per second and latency of our D-Bus layer against the same
/// loop written in C directly against libdbus, on the same private bus, in the same run.
///
///   dbus-bench ADDRESS [CALLS]      (scripts/bench-dbus.sh starts the bus and passes it)
///
/// Ours runs as bleadvd runs it: one ``EventLoop`` on the main thread, every task preferring it.
@main
struct DBusBench {
    static func main() throws {
        let loop = try EventLoop()
        Task(executorPreference: loop) {
            do {
                try await run(on: loop)
                exit(0)
            } catch {
                print("dbus-bench: \(error)")
                exit(1)
            }
        }
        loop.run()
    }

    static func run(on loop: EventLoop) async throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2 else {
            print("usage: dbus-bench BUS_ADDRESS [CALLS]")
            exit(2)
        }
        let address = arguments[1]
        let calls = arguments.count > 2 ? Int(arguments[2]) ?? 20_000 : 20_000
        guard cbench_start_server(address) == 0 else { fatalError("the C responder did not start") }
        let connection = try await DBusConnection.connect(to: .address(address), on: loop)

        // The machine's speed drifts within seconds (a shared VM): the two loops take turns in
        // rounds, so both see the same conditions, and the rates are over all rounds.
        let rounds = 10
        print("D-Bus round trips, \(calls) sequential calls each in \(rounds) alternating rounds, private dbus-daemon, C responder")
        print("case                      ours calls/s   C calls/s   ratio   ours p50/p99 µs   C p50/p99 µs")
        var switchCounts: [String] = []
        for (label, dictionary) in [("(a) no arguments", false), ("(b) a{sv} of 20 entries", true)] {
            var ours = Result.empty
            var c = Result.empty
            for _ in 0..<rounds {
                ours = ours + (try await counted { try await connection.benchmarkLoop(calls: calls / rounds, dictionary: dictionary) })
                c = c + (await counted { cLoop(address, calls: calls / rounds, dictionary: dictionary) })
            }
            switchCounts.append("\(label.prefix(3)) ours \(format(ours.switchesPerCall, 1)), C \(format(c.switchesPerCall, 1))")
            print(
                label.padding(26), format(ours.rate, 0).padding(15, left: true), format(c.rate, 0).padding(12, left: true),
                format(ours.rate / c.rate, 2).padding(8, left: true),
                "\(format(ours.p50, 1))/\(format(ours.p99, 1))".padding(18, left: true),
                "\(format(c.p50, 1))/\(format(c.p99, 1))".padding(15, left: true))
        }

        // Every thread of this process, the C responder's included (the same in both loops):
        // the difference is the hand-offs between threads that our layer costs per call.
        print("thread switches per call: " + switchCounts.joined(separator: "; "))

        let inFlight = 16
        let pipelined = try await pipelinedRate(connection, calls: calls, inFlight: inFlight)
        print("(c) no arguments, \(inFlight) calls in flight: ours \(format(pipelined, 0)) calls/s "
            + "(the blocking C loop cannot overlap calls)")

        let before = residentKiB()
        _ = try await connection.benchmarkLoop(calls: 100_000, dictionary: true)
        let after = residentKiB()
        print("memory: RSS \(before) KiB before and \(after) KiB after 100000 more calls (\(after - before) KiB)")

        let switches = contextSwitches()
        try await LoopClock(on: loop).sleep(for: .seconds(2))
        print("idle: \(contextSwitches() - switches) context switches in 2 s with the connection open")
    }

    struct Result {
        var latencies: [Double]
        var seconds: Double
        /// Context switches of the whole process while the loop ran.
        var switches = 0

        static let empty = Result(latencies: [], seconds: 0)

        var rate: Double { Double(latencies.count) / seconds }
        var p50: Double { latencies.sorted()[latencies.count / 2] }
        var p99: Double { latencies.sorted()[min(latencies.count - 1, latencies.count * 99 / 100)] }
        var switchesPerCall: Double { Double(switches) / Double(latencies.count) }

        static func + (a: Result, b: Result) -> Result {
            Result(latencies: a.latencies + b.latencies, seconds: a.seconds + b.seconds, switches: a.switches + b.switches)
        }
    }

    /// Runs a loop and records the process's context switches during it.
    static func counted(isolation: isolated (any Actor)? = #isolation, _ loop: () async throws -> Result) async rethrows -> Result {
        let before = contextSwitches()
        var result = try await loop()
        result.switches = contextSwitches() - before
        return result
    }

    static let dictionary = DBusValue.variantDictionary(
        Dictionary(uniqueKeysWithValues: (0..<20).map { (index: Int) -> (String, DBusValue) in
            (index < 10 ? "key0\(index)" : "key\(index)", .uint32(UInt32(index)))
        }))

    static func swiftLoop(_ connection: isolated DBusConnection, calls: Int, dictionary: Bool) async throws -> Result {
        let message = DBusMessage.methodCall(
            destination: "bench.server", path: "/bench", interface: "bench.Server", member: dictionary ? "Take" : "Ping",
            body: dictionary ? [Self.dictionary] : [])
        var latencies: [Double] = []
        latencies.reserveCapacity(calls)
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<calls {
            let callStart = clock.now
            _ = try await connection.call(message)
            latencies.append(microseconds(clock.now - callStart))
        }
        return Result(latencies: latencies, seconds: microseconds(clock.now - start) / 1e6)
    }

    /// `calls` calls spread over `inFlight` concurrent tasks on the connection's executor.
    static func pipelinedRate(_ connection: DBusConnection, calls: Int, inFlight: Int) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: DBusBench.Result.self) { group in
            for _ in 0..<inFlight {
                group.addTask { try await connection.benchmarkLoop(calls: calls / inFlight, dictionary: false) }
            }
            try await group.waitForAll()
        }
        return Double(calls / inFlight * inFlight) / (microseconds(clock.now - start) / 1e6)
    }

    static func cLoop(_ address: String, calls: Int, dictionary: Bool) -> Result {
        var latencies = [Double](repeating: 0, count: calls)
        let clock = ContinuousClock()
        let start = clock.now
        guard cbench_client_loop(address, Int32(calls), dictionary ? 1 : 0, &latencies) == 0 else {
            fatalError("the C loop failed")
        }
        return Result(latencies: latencies, seconds: microseconds(clock.now - start) / 1e6)
    }

    static func microseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1e6 + Double(attoseconds) / 1e12
    }

    static func format(_ value: Double, _ decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        guard decimals > 0 else { return String(Int(rounded)) }
        let whole = Int(rounded)
        let fraction = Int(((rounded - Double(whole)) * scale).rounded())
        let digits = String(fraction)
        return "\(whole)." + String(repeating: "0", count: max(0, decimals - digits.count)) + digits
    }

    /// The process's resident set size from /proc/self/status.
    static func residentKiB() -> Int {
        statusValue("/proc/self/status", "VmRSS:")
    }

    /// Voluntary and involuntary context switches of every thread of the process.
    static func contextSwitches() -> Int {
        guard let tasks = opendir("/proc/self/task") else { return 0 }
        defer { closedir(tasks) }
        var total = 0
        while let entry = readdir(tasks) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.first?.isNumber == true else { continue }
            total += statusValue("/proc/self/task/\(name)/status", "voluntary_ctxt_switches:")
            total += statusValue("/proc/self/task/\(name)/status", "nonvoluntary_ctxt_switches:")
        }
        return total
    }

    static func statusValue(_ path: String, _ key: String) -> Int {
        guard let file = fopen(path, "r") else { return 0 }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>? = nil
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!)
            if text.hasPrefix(key) {
                return Int(text.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first ?? "0") ?? 0
            }
        }
        return 0
    }
}

extension DBusConnection {
    /// The Swift loop, run on the connection's own executor: the fast path for a program that
    /// makes many calls in a row (no hop between the caller's executor and the connection's).
    func benchmarkLoop(calls: Int, dictionary: Bool) async throws -> DBusBench.Result {
        try await DBusBench.swiftLoop(self, calls: calls, dictionary: dictionary)
    }
}

extension String {
    func padding(_ width: Int, left: Bool = false) -> String {
        let pad = String(repeating: " ", count: max(0, width - count))
        return left ? pad + self : self + pad
    }
}
