import DBus
import Events
import Glibc
import Logging
import Peripheral

/// Notification sockets, one per central: from BlueZ 5.69 (bluez.git 8eb1dee87), bluetoothd asks
/// a characteristic that exports `NotifyAcquired` for a socket with `AcquireNotify` when a
/// central turns its notifications on, naming the central and its link's ATT MTU, and sends
/// what is written to that socket to that central alone. It closes the socket when the central
/// turns them off or its link ends. So bleadvd knows whose subscription it is and its MTU,
/// notifies one central alone, and gives a secured characteristic's socket only to centrals
/// it admits.
///
/// What goes to every subscriber still goes as a `PropertiesChanged` of `Value`, which
/// bluetoothd sends to every central whose notifications are on, socket or not: a bonded
/// central's notifications stay on across its links in bluetoothd (its device state), which
/// asks for a socket only when they change (gatt_ccc_write_cb: a write of the same value "just
/// succeeds"), so a bonded central that subscribes again on a later link gets no socket. Scenario
/// 65 on Debian 13 captured it: an adopted central, subscribing again, heard nothing through
/// sockets alone.
///
/// Older releases (Debian 12's 5.66) share one socket between every subscriber, and no release
/// passes indications through it with a confirmation before 5.80: there, and for any
/// characteristic that indicates, no socket is taken.
///
/// A socket that is full (bluetoothd is not reading it) makes no one wait: the value waits in
/// its place, the latest one wins, and each value a later one replaced counts as dropped
/// (``NotifySocket/dropped``).
struct NotifySocket {
    let characteristic: GATTCharacteristicID
    /// Whether only centrals bleadvd admits may have its values (its security is not none).
    let secured: Bool
    /// bleadvd's end (bluetoothd holds the other).
    let descriptor: DBusFileDescriptor
    let watch: EventLoop.Watch
    /// The latest value that found the socket full, sent when it has room.
    var waiting: [UInt8]?
    /// The values replaced by a later one while they waited.
    var dropped = 0
}

extension GATTCharacteristic {
    /// Whether its notifications go through a socket per central where BlueZ gives one: it
    /// notifies and does not indicate.
    var notifiesThroughSockets: Bool { flags.contains(.notify) && !flags.contains(.indicate) }
}

extension BlueZPeripheralManager {
    /// The most notification sockets open at once, all characteristics and centrals together.
    static let maximumNotifySockets = 256

    /// Whether bleadvd takes a socket per central from `adapter`'s bluetoothd: 5.71 or later, as
    /// its `Adapter1` properties tell (`Manufacturer`). 5.69 and 5.70 give sockets too, but the
    /// bus cannot tell them from 5.66: they count as older.
    func givesSocketsPerCentral(_ adapter: String, on generation: StackGeneration) async -> Bool {
        if let known = releases[adapter], known.generation == generation { return known.release >= .longData }
        _ = try? await adapters()
        return releases[adapter].map { $0.generation == generation && $0.release >= .longData } ?? false
    }

    /// bluetoothd's `AcquireNotify`: a central turned `id`'s notifications on. A socket pair;
    /// bluetoothd gets one end and the MTU. A secured characteristic refuses a central bleadvd
    /// does not admit (``admit(_:_:central:to:refusal:)``, with `Failed`).
    func acquireNotify(
        _ characteristic: GATTCharacteristic, _ id: GATTCharacteristicID, at path: DBusObjectPath, options: [String: DBusValue]
    ) throws -> [DBusValue] {
        let central = Self.central(options)
        guard !central.isEmpty else { throw DBusError(BlueZ.failed, "AcquireNotify names no device") }
        guard exports.keys.contains(where: { path.isDescendant(of: $0) }) else {
            throw DBusError(BlueZ.failed, "\(id) is no longer registered")
        }
        try admit(characteristic, id, central: central, to: "notifications", refusal: BlueZ.failed)
        endSocket(of: central, at: path, announce: false)
        guard notifySockets.values.reduce(0, { $0 + $1.count }) < Self.maximumNotifySockets else {
            logger.warning("GATT: refused \(Central.named(central)) the notifications of \(id): \(Self.maximumNotifySockets) notification sockets are open")
            throw DBusError(BlueZ.failed, "too many notification sockets")
        }
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw DBusError(BlueZ.failed, "no socket: \(String(cString: strerror(errno)))")
        }
        let ours = DBusFileDescriptor(owning: ends[0])
        let theirs = DBusFileDescriptor(owning: ends[1])
        _ = fcntl(ours.fd, F_SETFL, fcntl(ours.fd, F_GETFL) | O_NONBLOCK)
        let watch: EventLoop.Watch
        do {
            watch = try connection.eventLoop.watch(ours.fd, for: .readable) { [weak self] readiness in
                self?.assumeIsolated { $0.socketReady(of: central, at: path, readiness) }
            }
        } catch {
            throw DBusError(BlueZ.failed, "cannot watch the socket: \(error)")
        }
        let mtu = Int(options["mtu"]?.uint16 ?? 23)
        notifySockets[path, default: [:]][central] = NotifySocket(
            characteristic: id, secured: characteristic.security != .none, descriptor: ours, watch: watch)
        publish(.gatt(GATTEvent(id, .subscribed, central: central, mtu: mtu)))
        return [.unixFD(theirs), .uint16(UInt16(clamping: mtu))]
    }

    /// Sends `bytes` through the sockets of the characteristic at `path`: to every subscribed
    /// central, or to `only` one. A secured characteristic's value goes only to centrals bleadvd
    /// still admits. An empty value is sent to no one: bluetoothd reads an empty packet as the
    /// socket's end.
    /// - Throws: ``PeripheralError`` for `only`: `unknownName` when it is not subscribed,
    ///   `accessDenied` when bleadvd no longer admits it to a secured characteristic,
    ///   `invalidValue` for an empty value.
    func notifyThroughSockets(_ bytes: [UInt8], at path: DBusObjectPath, only: String?) throws {
        let subscribed = notifySockets[path] ?? [:]
        if let only {
            guard let socket = subscribed[only] else {
                let id = subscribed.values.first?.characteristic.description ?? path.rawValue
                throw PeripheralError(.unknownName, "\(only) is not subscribed to \(id)\(subscribed.isEmpty ? "" : "; subscribed: \(subscribed.keys.sorted().joined(separator: ", "))")")
            }
            guard !socket.secured || admits(only) else {
                throw PeripheralError(.accessDenied, "\(only) is no longer served \(socket.characteristic): it did not bond in a bleadvd pairing window")
            }
            guard !bytes.isEmpty else {
                throw PeripheralError(.invalidValue, "an empty value cannot be notified to one central: bluetoothd reads an empty packet as its socket's end")
            }
        }
        guard !bytes.isEmpty else { return }
        for (central, socket) in subscribed.sorted(by: { $0.key < $1.key }) where only == nil || only == central {
            guard !socket.secured || admits(central) else { continue }
            if socket.waiting != nil {
                notifySockets[path]![central]!.waiting = bytes
                notifySockets[path]![central]!.dropped += 1
                continue
            }
            send(bytes, to: central, at: path)
        }
    }

    /// One write to `central`'s socket; a full one keeps the value waiting and watches for room.
    private func send(_ bytes: [UInt8], to central: String, at path: DBusObjectPath) {
        guard let socket = notifySockets[path]?[central] else { return }
        let sent = bytes.withUnsafeBytes { Glibc.send(socket.descriptor.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        let error = errno
        if sent == bytes.count {
            notifySockets[path]![central]!.waiting = nil
            try? connection.eventLoop.update(socket.watch, to: .readable)
        } else if sent < 0, error == EAGAIN || error == EWOULDBLOCK || error == ENOBUFS {
            notifySockets[path]![central]!.waiting = bytes
            try? connection.eventLoop.update(socket.watch, to: Events.EventLoop.Interest(readable: true, writable: true))
        } else {
            logger.notice("GATT: \(socket.characteristic)'s notification socket for \(Central.named(central)) failed (\(sent < 0 ? String(cString: strerror(error)) : "a short write")): closed")
            endSocket(of: central, at: path, announce: true)
        }
    }

    /// The loop saw `central`'s socket ready: room for the value waiting, or bluetoothd closed
    /// it (the central turned notifications off, or its link ended). What bluetoothd writes
    /// into it (a confirmation) is read and let go.
    private func socketReady(of central: String, at path: DBusObjectPath, _ readiness: Events.EventLoop.Readiness) {
        guard let socket = notifySockets[path]?[central] else { return }
        var closed = readiness.hungUp || readiness.failed
        if readiness.readable, !closed {
            var buffer = [UInt8](repeating: 0, count: 16)
            closed = recv(socket.descriptor.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 0
        }
        if closed {
            endSocket(of: central, at: path, announce: true)
        } else if readiness.writable, let waiting = socket.waiting {
            send(waiting, to: central, at: path)
        }
    }

    /// Closes `central`'s socket for the characteristic at `path`, and says the subscription ended.
    func endSocket(of central: String, at path: DBusObjectPath, announce: Bool) {
        guard let socket = notifySockets[path]?.removeValue(forKey: central) else { return }
        if notifySockets[path]!.isEmpty { notifySockets[path] = nil }
        connection.eventLoop.remove(socket.watch)
        if socket.dropped > 0 {
            logger.info("GATT: \(socket.characteristic): \(socket.dropped) notification(s) to \(Central.named(central)) were replaced by a later value while its socket was full")
        }
        if announce { publish(.gatt(GATTEvent(socket.characteristic, .unsubscribed, central: central))) }
    }

    /// Closes the sockets of the characteristics under `root` (an application that goes).
    func endSockets(under root: DBusObjectPath) {
        for (path, sockets) in notifySockets where path.isDescendant(of: root) {
            for central in sockets.keys { endSocket(of: central, at: path, announce: true) }
        }
    }

    /// What each central's sockets dropped: values replaced by a later one while they waited.
    public func notificationsDropped() -> [String: Int] {
        var dropped: [String: Int] = [:]
        for sockets in notifySockets.values {
            for (central, socket) in sockets { dropped[central, default: 0] += socket.dropped }
        }
        return dropped
    }
}
