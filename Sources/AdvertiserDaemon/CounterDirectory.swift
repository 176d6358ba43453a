#if canImport(Glibc)
import Glibc
#endif
public import Peripheral
import Synchronization

/// Encrypted BTHome's counters, kept in a directory (the unit's `StateDirectory=`,
/// `/var/lib/bleadvd`) so that a counter never repeats for a key across restarts.
///
/// One file per key, named by the key's check value (`bthome-CHECKVALUE.counter`), holds the
/// end of the counters reserved so far: the first counter that no run can have used. Counters are reserved ahead in blocks of
/// ``block``: the file is written (and synced) before a block's first counter is used, so a
/// crash at any moment skips at most the rest of a block and never reuses a value.
public final class CounterDirectory: EncryptionCounters {
    /// How many counters one write reserves.
    public static var block: UInt32 { 1024 }

    /// The directory.
    public let path: String
    private let state = Mutex<[String: (next: UInt32, reserved: UInt32)]>([:])

    /// Counters kept in `path` (created, mode 0700, when missing).
    public init(path: String) {
        self.path = path
    }

    /// The file that keeps `key`'s counter.
    public func file(for key: BTHome.Key) -> String {
        path + "/bthome-" + key.checkValue + ".counter"
    }

    /// The next counter for `key`, reserving a new block in its file first when the last is used up.
    public func next(for key: BTHome.Key) throws(PeripheralError) -> UInt32 {
        let file = file(for: key)
        return try state.withLock { counters throws(PeripheralError) -> UInt32 in
            var counter: (next: UInt32, reserved: UInt32)
            if let known = counters[file] {
                counter = known
            } else {
                let stored = try Self.stored(in: file)
                counter = (stored, stored)
            }
            if counter.next == counter.reserved {
                guard counter.reserved < UInt32.max else {
                    throw PeripheralError(.failed, "the BTHome counter for \(key) is used up; configure a new encryption_key")
                }
                let reserved = counter.reserved &+ min(Self.block, UInt32.max - counter.reserved)
                try store(reserved, in: file)
                counter.reserved = reserved
            }
            defer { counter.next += 1; counters[file] = counter }
            return counter.next
        }
    }

    /// The counter stored in `file`; 0 when there is no file yet.
    private static func stored(in file: String) throws(PeripheralError) -> UInt32 {
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            guard errno == ENOENT else { throw failure("cannot read", file) }
            return 0
        }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0, let text = String(validating: buffer[..<count], as: UTF8.self),
              let value = UInt32(text.trimmingSuffix(while: { $0 == "\n" })) else {
            throw PeripheralError(.failed, "\(file) does not hold a counter; remove it only if the key in it will never be used again")
        }
        return value
    }

    /// Writes `value` to `file` so that either the old or the new value is there after a crash:
    /// a temporary file, synced, renamed over the old one, the directory synced.
    private func store(_ value: UInt32, in file: String) throws(PeripheralError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw Self.failure("cannot create", path) }
        let temporary = file + ".new"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.failure("cannot write", temporary) }
        let bytes = Array("\(value)\n".utf8)
        let written = write(descriptor, bytes, bytes.count)
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced, rename(temporary, file) == 0 else {
            let failure = Self.failure("cannot write", file)
            unlink(temporary)
            throw failure
        }
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    private static func failure(_ what: String, _ file: String) -> PeripheralError {
        PeripheralError(.failed, "\(what) \(file) (\(String(cString: strerror(errno)))), where the BTHome encryption counter is kept")
    }
}

extension String {
    fileprivate func trimmingSuffix(while drop: (Character) -> Bool) -> Substring {
        var text = self[...]
        while let last = text.last, drop(last) { text.removeLast() }
        return text
    }
}
