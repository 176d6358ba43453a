#if canImport(Glibc)
import Glibc
#endif
package import Peripheral
import Synchronization

/// Encrypted BTHome's counters, kept in a directory (the unit's `StateDirectory=`,
/// `/var/lib/bleadvd`) so that a counter never repeats for a key across restarts.
///
/// One file per key, named by the key's check value (`bthome-CHECKVALUE.counter`), holds the
/// end of the counters reserved so far: the first counter that no run can have used. Counters are reserved ahead in blocks of
/// ``block``: the file is written (and synced) before a block's first counter is used, so a
/// crash at any moment skips at most the rest of a block and never reuses a value.
package final class CounterDirectory: EncryptionCounters {
    /// How many counters one write reserves.
    package static var block: UInt32 { 1024 }

    /// The directory.
    package let path: String
    private let state = Mutex<[String: (next: UInt32, reserved: UInt32)]>([:])

    /// Counters kept in `path` (created, mode 0700, when missing).
    package init(path: String) {
        self.path = path
    }

    /// The file that keeps `key`'s counter.
    package func file(for key: BTHome.Key) -> String {
        path + "/bthome-" + key.checkValue + ".counter"
    }

    /// The next counter for `key`, reserving a new block in its file first when the last is used up.
    package func next(for key: BTHome.Key) throws(PeripheralError) -> UInt32 {
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
    ///
    /// The file must be exactly what ``store(_:in:)`` writes (``StateFile/read(_:limit:)``
    /// refuses links, FIFOs and devices): a decimal number without leading zeros and one
    /// newline. Anything else is refused as corrupt, never read as some smaller number: a
    /// counter that went backwards would repeat a nonce.
    static func stored(in file: String) throws(PeripheralError) -> UInt32 {
        let bytes: [UInt8]?
        do {
            bytes = try StateFile.read(file, limit: longest)
        } catch {
            throw problem(error, file)
        }
        guard let bytes else { return 0 }
        guard let value = parse(bytes[...]) else { throw problem(.corrupt("does not hold a counter as bleadvd writes it"), file) }
        return value
    }

    /// The longest file ``store(_:in:)`` writes: `4294967295\n`.
    static let longest = 11

    /// The counter in `bytes` when they are exactly what ``store(_:in:)`` writes, else nil.
    static func parse(_ bytes: ArraySlice<UInt8>) -> UInt32? {
        guard bytes.last == UInt8(ascii: "\n") else { return nil }
        let digits = bytes.dropLast()
        guard !digits.isEmpty, digits.count <= 10, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              digits.first != UInt8(ascii: "0") || digits.count == 1 else { return nil }
        return UInt32(String(decoding: digits, as: UTF8.self))
    }

    /// What a problem with `file` means for the key whose counter it keeps.
    private static func problem(_ problem: StateFile.Problem, _ file: String) -> PeripheralError {
        switch problem {
        case .corrupt:
            PeripheralError(
                .failed,
                "\(problem.description(file: file)), so the BTHome encryption counter is unknown and nothing is sent with that key; "
                    + "restore the file from a backup, or configure a new encryption_key (see bleadvd(8), STATE)")
        case .failed:
            PeripheralError(.failed, "\(problem.description(file: file)), where the BTHome encryption counter is kept")
        }
    }

    /// Writes `value` to `file` so that either the old or the new value is there after a crash.
    private func store(_ value: UInt32, in file: String) throws(PeripheralError) {
        do {
            try StateFile.write(Array("\(value)\n".utf8), to: file, in: path)
        } catch {
            throw Self.problem(error, file)
        }
    }
}
