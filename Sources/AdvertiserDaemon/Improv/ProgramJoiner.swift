#if canImport(Glibc)
import Glibc
#endif
import AdvertiserConfig
package import Peripheral
import Support

/// Joins Wi-Fi networks through a program (`[improv] join = "/path"`): it gets the SSID in
/// `IMPROV_SSID` (as text; invalid UTF-8 replaced) and `IMPROV_SSID_HEX` (exactly), the
/// password on its standard input (never on its command line, where `ps` would show it), and
/// exits 0 once the network is joined, printing the address it got as its first line. Any
/// other exit, or ``timeout`` passing first (it is killed then), is a failure.
package struct ProgramJoiner<C: Clock>: NetworkJoining where C.Duration == Duration {
    /// The program.
    let program: String
    /// Whose sleeps pace the wait.
    let clock: C
    /// Where the task that reaps a killed program later runs (bleadvd's event loop).
    let executor: (any TaskExecutor)?

    /// How long a join may take.
    package static var timeout: Duration { .seconds(90) }
    /// How often the program is looked at while it runs.
    static var poll: Duration { .milliseconds(100) }
    /// The most of its output kept.
    static var maximumOutput: Int { 4096 }

    /// A joiner running `program`, a killed one reaped later by a task on `executor`.
    package init(program: String, clock: C, executor: (any TaskExecutor)?) {
        self.program = program
        self.clock = clock
        self.executor = executor
    }

    /// A failure, said in a line.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    package func join(_ credentials: Improv.Credentials) async throws -> String? {
        let ssid = String(decoding: credentials.ssid, as: UTF8.self).replacing("\0", with: "\u{FFFD}")
        let (pid, parent): (Int32, Int32)
        do {
            (pid, parent) = try Spawn.startConnected(
                program, [program], environment: ["IMPROV_SSID=\(ssid)", "IMPROV_SSID_HEX=\(Hex.encode(credentials.ssid))"], group: true,
                expendable: true)
        } catch {
            let what = error.socketPair ? "socketpair" : "cannot run \(Untrusted.quoted(program))"
            throw Failure(description: "\(what): \(String(cString: strerror(error.code)))")
        }
        defer { close(parent) }
        _ = fcntl(parent, F_SETFL, fcntl(parent, F_GETFL) | O_NONBLOCK)
        var input = credentials.password
        if input.isEmpty { shutdown(parent, Int32(SHUT_WR)) }
        var output: [UInt8] = []
        let exited = await Spawn.exit(of: pid, within: Self.timeout, polling: Self.poll, on: clock, executor: executor) {
            if !input.isEmpty {
                let sent = input.withUnsafeBytes { send(parent, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent > 0 { input.removeFirst(sent) }
                // It stopped reading (it exited, or does not want the password): no more to send.
                if sent < 0 && errno != EAGAIN && errno != EINTR { input = [] }
                if input.isEmpty { shutdown(parent, Int32(SHUT_WR)) }
            }
            Self.drain(parent, into: &output)
        }
        guard let status = exited else {
            throw Failure(description: "\(Untrusted.quoted(program)) did not finish within \(Self.timeout.components.seconds) s; killed")
        }
        Self.drain(parent, into: &output)
        // What the program says reaches the journal and the client (its address, its error):
        // never the password it was given, should it repeat it.
        let text = String(decoding: Self.redacted(output, password: credentials.password), as: UTF8.self)
        let signal = status & 0x7F, code = (status >> 8) & 0xFF
        guard signal == 0, code == 0 else {
            let said = text.split(separator: "\n").first.map { ": \(Untrusted.quoted($0, limit: 120))" } ?? ""
            throw Failure(description: "\(Untrusted.quoted(program)) \(signal != 0 ? "was killed by signal \(signal)" : "exited \(code)")\(said)")
        }
        let first = text.split(separator: "\n").first.map { String($0).trimmingPrefix(" ") }.map(String.init)
        // A first line that repeated the password is no address.
        return first.flatMap { $0.isEmpty || $0.contains("(the password)") ? nil : Untrusted.shown($0, limit: 64) }
    }

    /// A program only joins: the scan capability is not offered with one.
    package func networks() async throws -> [Improv.Network] {
        throw Failure(description: "\(Untrusted.quoted(program)) joins networks but does not list them")
    }

    /// A program cannot say whether the Wi-Fi is connected: Improv is offered until a client
    /// provisions the device.
    package func wifi() async throws -> WifiWatch? { nil }

    /// Reads what the program wrote so far, keeping at most ``maximumOutput`` bytes.
    /// `output` with every repetition of `password` in it replaced by "(the password)": the
    /// password as given, without its NUL bytes (a shell drops them), and each of its lines of 4
    /// bytes or more.
    static func redacted(_ output: [UInt8], password: [UInt8]) -> [UInt8] {
        guard !password.isEmpty else { return output }
        var pieces = [password, password.filter { $0 != 0 }] + password.split(whereSeparator: { $0 == 0 || $0 == 10 }).map(Array.init)
        pieces = pieces.filter { $0.count >= 4 }.sorted { $0.count > $1.count }
        let mark = Array("(the password)".utf8)
        return pieces.reduce(output) { text, piece in text.replacing(piece, with: mark) }
    }

    private static func drain(_ socket: Int32, into output: inout [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            output += buffer[..<min(count, max(0, maximumOutput - output.count))]
        }
    }
}
