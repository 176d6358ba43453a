public import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A `dbus-daemon` of the test's own, on a socket in a fresh temporary folder, stopped when the
/// value goes away. Session-style policy: everyone may own and call anything.
public final class PrivateBus: @unchecked Sendable {
    /// The bus address, for `DBUS_SYSTEM_BUS_ADDRESS` or `--address=`.
    public let address: String
    /// A temporary folder of the test's own, removed with the bus.
    public let folder: URL
    private let process: Child

    /// Starts a bus daemon. With `systemPolicy`, it runs with the system bus's default policy
    /// (no one may own names or call methods unless a rule allows it) plus those policy files.
    /// `activatable` maps well-known names to the command line the bus runs to start their
    /// owner when a call for one finds none (bus activation, as org.bluez is under systemd).
    ///
    /// All of it (files written and synced, the daemon started, its address awaited: seconds on
    /// a loaded machine) runs on a thread of its own: a test's start must not hold one of the
    /// cooperative pool's two threads, which the daemons of other tests, awaited with a
    /// deadline, need meanwhile (five ControlTests saw no READY=1 in 20 s while both threads
    /// waited on programs' first lines, beside the test bed's image build).
    public convenience init(systemPolicy: [String]? = nil, activatable: [String: String] = [:]) async throws {
        let (folder, process, address) = try await offThePool { try Self.start(systemPolicy: systemPolicy, activatable: activatable) }
        self.init(folder: folder, process: process, address: address)
    }

    private init(folder: URL, process: Child, address: String) {
        (self.folder, self.process, self.address) = (folder, process, address)
        Self.tally()
    }

    private static func start(systemPolicy: [String]?, activatable: [String: String]) throws -> (URL, Child, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bleadvd-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // Other users (the unprivileged caller of a policy test) must reach the socket.
        chmod(folder.path, 0o755)
        let config = folder.appendingPathComponent("bus.conf")
        let services = folder.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        for (name, exec) in activatable {
            try "[D-BUS Service]\nName=\(name)\nExec=\(exec)\n"
                .write(to: services.appendingPathComponent("\(name).service"), atomically: true, encoding: .utf8)
        }
        let policy = systemPolicy.map { includes in
            """
              <policy context="default">
                <allow user="*"/>
                <deny own="*"/>
                <deny send_type="method_call"/>
                <allow send_type="signal"/>
                <allow send_requested_reply="true" send_type="method_return"/>
                <allow send_requested_reply="true" send_type="error"/>
                <allow receive_type="method_call"/>
                <allow receive_type="method_return"/>
                <allow receive_type="error"/>
                <allow receive_type="signal"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
                <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
              </policy>
            """ + includes.map { "\n  <include>\($0)</include>" }.joined()
        } ?? """
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            """
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>\(systemPolicy == nil ? "session" : "system")</type>
              <listen>unix:path=\(folder.path)/socket</listen>
              <auth>EXTERNAL</auth>
              <servicedir>\(services.path)</servicedir>
            \(policy)
            </busconfig>
            """.write(to: config, atomically: true, encoding: .utf8)
        // dbus-daemon complains on stderr that it cannot raise its fd limit; that is expected.
        let process = try Child(
            "/usr/bin/dbus-daemon",
            ["--config-file=\(config.path)", "--nofork", "--nopidfile", "--print-address=1"],
            captureErrors: false)
        return (folder, process, try readLine(from: process.stdout))
    }

    /// With `BLEADVD_BUS_TALLY` set to a file, appends the running test's id to it: which tests
    /// start a dbus-daemon (`scripts/bus-tally.sh`).
    private static func tally() {
        guard let path = ProcessInfo.processInfo.environment["BLEADVD_BUS_TALLY"], let test = Test.current else { return }
        // One write to a file opened for appending: lines of tests that run at once never mix.
        let file = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard file >= 0 else { return }
        defer { close(file) }
        let line = Array("\(test.id)\n".utf8)
        _ = line.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
    }

    /// A bus with the system bus's default policy that also refuses `GetNameOwner`, so that a
    /// connection cannot learn who owns a name (to test what follows from that).
    public static func refusingGetNameOwner() async throws -> PrivateBus {
        let policy = FileManager.default.temporaryDirectory.appendingPathComponent("deny-owner-\(UUID().uuidString).conf")
        try """
            <busconfig><policy context="default">
              <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus" send_member="GetNameOwner"/>
            </policy></busconfig>
            """.write(to: policy, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: policy) }
        return try await PrivateBus(systemPolicy: [policy.path])
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// Kills the bus daemon, as a crash or `systemctl stop dbus` would.
    public func stop() {
        process.terminate()
    }

    /// Reads one line (without its newline) from a pipe, on a thread of its own: a test that
    /// waits for a program's line must not block a thread of the (two-thread) cooperative pool,
    /// which the code under test, and another such test, need meanwhile.
    public static func line(from handle: FileHandle) async throws -> String {
        try await offThePool { try readLine(from: handle) }
    }

    /// Reads one line (without its newline) from a pipe.
    /// - Throws: when the program exits first, or prints no whole line within `limit` (a guard
    ///   against a program that hangs before its first line, which would hang the run).
    public static func readLine(from handle: FileHandle, within limit: Duration = .seconds(60)) throws -> String {
        let deadline = ContinuousClock.now + limit
        var bytes: [UInt8] = []
        let fd = handle.fileDescriptor
        guard fd >= 0 else { throw TestFailure("the pipe is closed") }
        while true {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = ContinuousClock.now.duration(to: deadline).components
            let milliseconds = max(0, Int32(clamping: left.seconds * 1_000 + left.attoseconds / 1_000_000_000_000_000))
            let polled = poll(&ready, 1, milliseconds)
            if polled < 0 && errno == EINTR { continue }
            guard polled >= 0 else { throw TestFailure("poll failed: \(String(cString: strerror(errno)))") }
            guard polled > 0 else { throw TestFailure("no line within \(limit); got \(String(decoding: bytes, as: UTF8.self))") }
            guard ready.revents & Int16(POLLNVAL) == 0 else { throw TestFailure("the pipe is closed") }
            let chunk = handle.readBytes(upTo: 1)
            guard let byte = chunk.first else {
                throw TestFailure("process exited before printing a line; got \(String(decoding: bytes, as: UTF8.self))")
            }
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A failure of the test harness itself, with a message.
public struct TestFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    /// A failure.
    public init(_ description: String) { self.description = description }
}

/// `busctl` on the private bus: systemd's sd-bus, an implementation we did not write.
@discardableResult
public func busctl(_ bus: PrivateBus, _ arguments: [String]) async throws -> String {
    try await runOffPool("/usr/bin/busctl", ["--address=\(bus.address)"] + arguments)
}

/// `dbus-send` on the private bus; it prints error replies as `Error NAME: MESSAGE`.
public func dbusSend(_ bus: PrivateBus, _ arguments: [String]) async throws -> String {
    try await runOffPool("/usr/bin/dbus-send", ["--bus=\(bus.address)", "--print-reply"] + arguments)
}
