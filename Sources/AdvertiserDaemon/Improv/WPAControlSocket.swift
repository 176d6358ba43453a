#if canImport(Glibc)
import Glibc
#endif
import Peripheral

/// wpa_supplicant's control interface for one network interface, as wpa_cli reaches it: a
/// datagram socket bound in a folder of the caller's (wpa_supplicant answers it by path), each
/// request one datagram, each reply one datagram. Unsolicited event messages (`<N>...`) are
/// skipped, as wpa_supplicant's own client library does; none come unless a client attaches.
package final class WPAControlSocket: WPAControlling {
    private let descriptor: Int32
    private let path: String
    /// How long a reply may take (wpa_cli waits 10 s).
    static var replyTimeout: Int32 { 10_000 }
    /// The longest reply read: LIST_NETWORKS with many networks stays well within it.
    static var replyLimit: Int { 16_384 }

    /// A socket bound at a fresh name in `clientFolder`, connected to `server`.
    /// - Throws: a failure naming the step and the system's reason.
    package init(server: String, clientFolder: String) throws(WPAFailure) {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Self.failure("socket") }
        path = "\(clientFolder)/bleadvd-wpa-\(getpid())"
        unlink(path)
        guard Self.with(path, { bind(descriptor, $0, $1) }) == 0 else {
            let failure = Self.failure("cannot bind \(Untrusted.quoted(path))")
            close(descriptor)
            throw failure
        }
        guard Self.with(server, { connect(descriptor, $0, $1) }) == 0 else {
            let failure = Self.failure("cannot reach wpa_supplicant at \(Untrusted.quoted(server))")
            close(descriptor)
            unlink(path)
            throw failure
        }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    package func request(_ command: String) throws(WPAFailure) -> String {
        let verb = command.prefix { $0 != " " }
        var text = command
        let sent = text.withUTF8 { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == command.utf8.count else { throw Self.failure("cannot send \(verb) to wpa_supplicant") }
        var buffer = [UInt8](repeating: 0, count: Self.replyLimit)
        while true {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, Self.replyTimeout)
            guard polled > 0 else {
                if polled < 0 && errno == EINTR { continue }
                throw WPAFailure("wpa_supplicant did not answer \(verb) within \(Self.replyTimeout / 1000) s")
            }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count >= 0 else { throw Self.failure("no answer from wpa_supplicant to \(verb)") }
            // An event message, for a client that attached: not the reply.
            if count > 0 && buffer[0] == UInt8(ascii: "<") { continue }
            return String(decoding: buffer[..<count], as: UTF8.self)
        }
    }

    /// Calls `body` with `path` as a `sockaddr_un`; -1 with ENAMETOOLONG when it does not fit.
    private static func with(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            errno = ENAMETOOLONG
            return -1
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    private static func failure(_ what: String) -> WPAFailure {
        WPAFailure("\(what): \(String(cString: strerror(errno)))")
    }
}
