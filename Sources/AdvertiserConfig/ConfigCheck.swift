#if canImport(Glibc)
import Glibc
#endif
import Support

/// Reads a config file once and has a child process parse those bytes before this one does.
///
/// TOMLKit's parser (toml++) aborts the process on some malformed files — `"\n[\n\n"` fails an
/// assertion in its key parser; libFuzzer finds it in seconds (`make fuzz`) — so bleadvd and
/// `bleadvctl preview` never parse a file that a child of theirs has not parsed first:
/// ``load(path:arguments:executable:)`` reads the file, hands the bytes to the program again
/// (its `arguments` with ``checking`` set; it answers with ``childMain(file:)``), and parses
/// the same bytes here only when the child accepted them. A file that changes meanwhile
/// changes nothing: the bytes checked are the bytes applied. A file the child refuses is
/// never parsed here, so a refused reload costs the daemon no memory.
public enum ConfigCheck {
    /// Set in the child's environment: it reads the config on standard input.
    public static let checking = "BLEADVD_CONFIG_CHECK"
    /// How long the child may take before it is killed and the file refused.
    public static let timeoutMilliseconds: Int32 = 10_000
    /// The most bytes of the child's answer (its error line) that are read.
    public static let maximumAnswer = 4096

    /// Whether this process is such a child.
    public static var isChild: Bool { getenv(checking) != nil }

    /// The config at `path`: read once, parsed by a child process (`executable` with
    /// `arguments`, the first being its name), then parsed here if the child accepted it.
    /// - Throws: ``ConfigError``: the file's own error as the child found it, or that it crashed
    ///   the parser, took too long, or could not be checked at all (then it is refused too).
    public static func load(path: String, arguments: [String], executable: String = "/proc/self/exe") throws(ConfigError) -> DaemonConfig {
        let text = try ConfigParser.contents(of: path)
        switch run(executable, arguments, input: Array(text.utf8)) {
        case .accepted:
            return try ConfigParser.parse(text, file: path)
        case .refused(let answer):
            throw ConfigError(file: "", line: nil, key: "", message: answer)
        case .crashed(let signal):
            throw crashed(path, signal: signal)
        case .failed(let reason):
            throw ConfigError(file: path, line: nil, key: "", message: "cannot be checked, so it is refused: \(reason)")
        }
    }

    /// The child's side: reads the config text on standard input, parses it as `file`, and
    /// writes the error, if any, as one line to standard output.
    /// - Returns: the exit status: 0 accepted, 2 refused.
    public static func childMain(file: String) -> Int32 {
        let bytes = Spawn.standardInput(upTo: ConfigParser.maximumFileSize)
        do throws(ConfigError) {
            guard bytes.count <= ConfigParser.maximumFileSize else {
                throw ConfigError(file: file, line: nil, key: "", message: "is over \(ConfigParser.maximumFileSize) bytes")
            }
            _ = try ConfigParser.parse(try ConfigParser.text(bytes, file: file), file: file)
            return 0
        } catch {
            var line = Array(error.description.utf8.prefix(maximumAnswer))
            _ = line.withUnsafeMutableBytes { write(1, $0.baseAddress, $0.count) }
            return 2
        }
    }

    /// The error for a file that crashed the child with `signal`.
    public static func crashed(_ path: String, signal: Int32) -> ConfigError {
        ConfigError(
            file: path, line: nil, key: "",
            message: "crashes the TOML parser (signal \(signal) in a child process; nothing was read): "
                + "look for a table header, key, array or inline table cut short or not closed, e.g. a '[' at the end of a line or '[ }'")
    }

    /// What the child made of the bytes.
    enum Verdict: Equatable {
        case accepted
        case refused(String)
        case crashed(Int32)
        case failed(String)
    }

    /// Starts the child on one end of a socket pair (its standard input and output; a socket,
    /// so a child that dies early cannot raise SIGPIPE here), sends it `input`, reads its answer.
    static func run(_ executable: String, _ arguments: [String], input: [UInt8], timeoutMilliseconds: Int32 = timeoutMilliseconds) -> Verdict {
        let (pid, parent): (pid_t, Int32)
        do {
            (pid, parent) = try Spawn.startConnected(executable, arguments, environment: ["\(checking)=1"])
        } catch {
            return .failed((error.socketPair ? "socketpair: " : "cannot start the child process: ") + String(cString: strerror(error.code)))
        }
        defer { close(parent) }
        guard let answer = exchange(on: parent, input: input, timeoutMilliseconds: timeoutMilliseconds) else {
            Spawn.stop(pid)
            return .failed("the check took longer than \(timeoutMilliseconds) ms")
        }
        let status = Spawn.status(waitingFor: pid)
        let signal = status & 0x7F
        if signal != 0 && signal != 0x7F { return .crashed(signal) }
        let code = (status >> 8) & 0xFF
        switch code {
        case 0: return .accepted
        case 2: return .refused(String(decoding: answer, as: UTF8.self))
        default: return .failed("the child process exited with status \(code)")
        }
    }

    /// Sends `input`, then reads until the child closes its end: its answer (at most
    /// ``maximumAnswer`` bytes kept), or nil when ``timeoutMilliseconds`` passed first.
    private static func exchange(on socket: Int32, input: [UInt8], timeoutMilliseconds: Int32) -> [UInt8]? {
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
        var sent = 0
        if input.isEmpty { shutdown(socket, Int32(SHUT_WR)) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        while true {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let elapsed = Int32((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1_000_000)
            guard elapsed < timeoutMilliseconds else { return nil }
            var poll = pollfd(fd: socket, events: Int16(POLLIN) | (sent < input.count ? Int16(POLLOUT) : 0), revents: 0)
            guard Glibc.poll(&poll, 1, timeoutMilliseconds - elapsed) >= 0 || errno == EINTR else { return nil }
            if poll.revents & Int16(POLLOUT) != 0, sent < input.count {
                let count = input[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if count > 0 { sent += count }
                // The child stopped reading (it crashed, or refused early): its answer follows.
                if count < 0 && errno != EAGAIN && errno != EINTR { sent = input.count }
                if sent == input.count { shutdown(socket, Int32(SHUT_WR)) }
            }
            if poll.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let count = recv(socket, &buffer, buffer.count, 0)
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { return answer }
                if count > 0, answer.count < maximumAnswer { answer += buffer[..<min(count, maximumAnswer - answer.count)] }
            }
        }
    }
}
