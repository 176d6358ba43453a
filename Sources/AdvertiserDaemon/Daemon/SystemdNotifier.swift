#if canImport(Glibc)
import Glibc
#endif

/// `sd_notify` without libsystemd: one datagram to `$NOTIFY_SOCKET` (a path, or `@name` for
/// the abstract namespace). Without the variable (not started by systemd) it does nothing.
package struct SystemdNotifier: Sendable {
    private let socketPath: String?
    private let afterReady: @Sendable () -> Void

    /// A notifier for the socket systemd gave this process, if any, that calls `afterReady`
    /// each time it said `READY=1` (at start, and after each reload), with systemd or without.
    package init(environment: [String: String], afterReady: @escaping @Sendable () -> Void = {}) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        self.afterReady = afterReady
    }

    /// The watchdog interval systemd asked for (`$WATCHDOG_USEC`), if any.
    package static func watchdogInterval(environment: [String: String]) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = Int64(text), usec > 0 else { return nil }
        return .microseconds(usec)
    }

    /// `RELOADING=1` with the `MONOTONIC_USEC=` systemd wants alongside it.
    package func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        notify("RELOADING=1\nMONOTONIC_USEC=\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)")
    }

    /// Sends `state` (e.g. `READY=1\nSTATUS=on air`) without waiting. Failures are ignored, as
    /// sd_notify's are, and so is a socket whose queue is full: a daemon that waited there until
    /// the reader caught up would answer nothing meanwhile (a socket nobody read hung bleadvd
    /// after its tenth status change).
    package func notify(_ state: String) {
        send(state)
        if state.split(separator: "\n").contains("READY=1") { afterReady() }
    }

    private func send(_ state: String) {
        guard let socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
        let bytes = Array(state.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress, length)
            }
        }
    }
}
