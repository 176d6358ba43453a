/// The values of one named thing that can be set at run time (an advertisement, a GATT
/// service): as the file gave them, in force, and as last handed to the module. One sender at
/// a time brings the module up to the values in force, at most every `Daemon.updateInterval`:
/// values set faster than that are coalesced, the newest winning.
struct Coalesced<Value: Equatable & Sendable>: Sendable {
    /// As the file said when it was last read.
    private(set) var file: Value
    /// In force: the file's, with the values set (and written by centrals) since.
    private(set) var live: Value
    /// What was last handed to the module.
    private(set) var sent: Value
    /// Whether a sender is taking the values in force to the module now.
    private(set) var sending = false

    init(_ file: Value) {
        self.file = file
        live = file
        sent = file
    }

    /// Takes `value` as the one in force. Returns whether a sender must be started for it:
    /// true unless one is running, which takes it along.
    mutating func set(_ value: Value) -> Bool {
        live = value
        guard !sending else { return false }
        sending = true
        return true
    }

    /// What the sender hands the module next: the values last sent and those in force, now
    /// counted as sent; nil when the module has the values in force, and the sender stops.
    mutating func next() -> (sent: Value, live: Value)? {
        guard live != sent else {
            sending = false
            return nil
        }
        defer { sent = live }
        return (sent, live)
    }

    /// The values in force were handed to the module by other means (an event's packet, which
    /// carries them): a sender running finds nothing to send.
    mutating func markSent() {
        sent = live
    }

    /// The sender ended early (cancelled); the next set starts another.
    mutating func senderEnded() {
        sending = false
    }

    /// Changes the values in force and those sent alike: what the module (and BlueZ) holds
    /// already, such as a central's write. A set still on its way goes on.
    mutating func held(_ change: (inout Value) -> Void) {
        change(&live)
        change(&sent)
    }

    /// After the file was read again: unchanged there, the values set since stay in force and
    /// are what the module is given now; changed there, they start from the file (a sender
    /// still running finds nothing to send).
    func reloaded(from file: Value) -> Coalesced {
        var next = file == self.file ? self : Coalesced(file)
        next.sent = next.live
        next.sending = sending
        return next
    }
}
