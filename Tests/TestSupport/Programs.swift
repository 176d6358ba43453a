public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a program did: its exit status and its output.
public struct ProgramResult: Sendable {
    /// The exit status (128 + signal when killed).
    public var status: Int32
    /// Standard output.
    public var output: String
    /// Standard error.
    public var errors: String
}

/// Writes an executable script (mode 0755) to `path` through a descriptor closed on exec: a
/// child another test spawns meanwhile must not inherit it open for writing, or running the
/// script fails with ETXTBSY for as long as that child lives (Foundation's atomic write leaves
/// its descriptor open across such a spawn).
public func writeExecutable(_ script: String, to path: String) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
    guard descriptor >= 0 else { throw TestFailure("cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    let bytes = Array(script.utf8)
    let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    guard written == bytes.count else { throw TestFailure("cannot write \(path)") }
}

/// The folder this package's executables are built into (next to the test binary).
public var productsDirectory: URL {
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    return URL(fileURLWithPath: exe).deletingLastPathComponent()
}

/// The path of one of this package's executables, e.g. `bleadvd`. `bleadvctl` is a link to
/// bleadvd, as `make build` and the package make it: made here beside the test build's bleadvd.
public func product(_ name: String) -> String {
    let path = productsDirectory.appendingPathComponent(name).path
    if name == "bleadvctl", (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != "bleadvd" {
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: "bleadvd")
    }
    return path
}

/// Runs a program to completion on a thread of its own and returns what it did, whatever its
/// exit status. Its output is read while it runs, stdout and stderr each on their own thread.
public func runProgram(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> ProgramResult {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result {
                let child = try Child(executable, arguments, environment: environment)
                // Read stderr on another thread so a chatty program cannot fill one pipe and stall.
                let errors = ErrorsReader(child.stderr!)
                let output = child.stdout.readToEndRetrying()
                let status = child.wait()
                return ProgramResult(
                    status: status, output: String(decoding: output, as: UTF8.self), errors: errors.text())
            })
        }
    }
}

/// Reads a pipe to its end on a thread of its own.
final class ErrorsReader: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readToEndRetrying()
            done.signal()
        }
    }

    func text() -> String {
        done.wait()
        return String(decoding: data, as: UTF8.self)
    }
}

/// A `$NOTIFY_SOCKET` of the test's own: receives what a service tells systemd.
public final class NotifySocket: @unchecked Sendable {
    /// The socket's path, for `NOTIFY_SOCKET`.
    public let path: String
    private let fd: Int32
    /// Every message received so far, in order.
    public private(set) var messages: [String] = []

    /// Binds a datagram socket called `name` in `folder`.
    public init(in folder: URL, name: String = "notify") throws {
        path = folder.appendingPathComponent(name).path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, bound == 0 else { throw TestFailure("cannot bind \(path)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// Waits (off the cooperative pool) until a message containing `text` arrived.
    /// - Throws: when none did within `limit`, a guard against a hang as ``eventually(_:within:every:isolation:_:)``'s
    ///   is: an in-process daemon's READY=1, which takes a fraction of a second alone, took over
    ///   20 s beside the test bed's image build.
    public func waitFor(_ text: String, within limit: Duration = .seconds(60)) async throws {
        try await offThePool { [self] in
            let deadline = ContinuousClock.now + limit
            while ContinuousClock.now < deadline {
                if messages.contains(where: { $0.contains(text) }) { return }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = recv(fd, &buffer, buffer.count, 0)
                if count > 0 { messages.append(String(decoding: buffer[0..<count], as: UTF8.self)) }
            }
            throw TestFailure("no \(text) within \(limit); got \(messages)")
        }
    }
}

extension FileHandle {
    /// Up to `count` bytes, fewer only at the end: Foundation's own reads abort on EINTR (a
    /// `try!`), which a signal to the test process (a child's SIGCHLD under a handler without
    /// SA_RESTART) causes now and then; these reads try again.
    public func readBytes(upTo count: Int) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: Swift.min(count, 65_536))
        while data.count < count {
            let got = Glibc.read(fileDescriptor, &buffer, Swift.min(buffer.count, count - data.count))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            data.append(contentsOf: buffer[..<got])
        }
        return data
    }

    /// Everything up to the end, as `readDataToEndOfFile()` would, trying again on EINTR.
    public func readToEndRetrying() -> Data {
        readBytes(upTo: .max)
    }
}

/// `work`'s result, computed on a thread of its own: blocking work (a wait, seconds of parsing)
/// on one of the cooperative pool's two threads starves the code under test, and other tests,
/// of it meanwhile.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: work()) }
    }
}

/// `work`'s result or error, computed on a thread of its own (see the non-throwing form): a
/// program's start, which waits for the program's first line.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
