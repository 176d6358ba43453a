import DBus
public import Peripheral

/// The control API's stack part, which the advertising component serves: whether BlueZ
/// answers. `status`, `list`, `centrals` and `bonds` answer from what bleadvd knows while BlueZ
/// does not; this says since when that knowledge may be behind.
public protocol StackControl: Sendable {
    /// The oldest call to BlueZ still waiting for its answer after half a second; nil while
    /// BlueZ answers.
    func unanswered() async -> UnansweredCall?
}

extension UnansweredCall {
    /// As `Stack` carries it: `answering` b false, `unanswered_since` d (seconds since the Unix
    /// epoch), `unanswered_seconds` d.
    var dbusEntries: [String: DBusValue] {
        [
            "answering": .boolean(false),
            "unanswered_since": .double(sentAt), "unanswered_seconds": .double(waited.inSeconds),
        ]
    }

    /// The silence a `Stack` reply says (its call unnamed); nil when it says BlueZ answers, or
    /// is malformed.
    init?(stack entries: [String: DBusValue]) {
        guard entries["answering"]?.boolean == false, let since = entries["unanswered_since"]?.double,
              let seconds = entries["unanswered_seconds"]?.double,
              // Times a person can read: no NaN, nothing before 1970 or past year 33658.
              (0..<1e12).contains(since), (0..<1e9).contains(seconds) else { return nil }
        self.init(call: "", sentAt: since, waited: .milliseconds(Int64((seconds * 1000).rounded())))
    }

    /// One line for a person: since when BlueZ has not answered.
    public var said: String {
        let seconds = (waited.inSeconds * 10).rounded() / 10
        return "BlueZ has not answered since \(WallClock.time(of: sentAt)) (\(seconds) s): what follows is what bleadvd knew then"
    }
}

extension Duration {
    /// The duration in seconds, with its fraction: what the control API's replies carry.
    package var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension ControlAPI.Method {
    /// `Stack() -> a{sv}`: whether BlueZ answers: `answering` b; when it does not (a call to
    /// bluetoothd has waited half a second or more, or timed out with none answered since),
    /// `unanswered_since` d (when the oldest such call was sent, seconds since the Unix epoch)
    /// and `unanswered_seconds` d (how long it has waited). Which call it is stays in the
    /// journal: it may tell a local user that a link or a bond is being ended. Asks nothing of
    /// BlueZ.
    public static let stack = Self(
        "Stack", of: (any StackControl).self, outputs: [DBusArgument("stack", .dictionary(key: .string, value: .variant))], access: .everyone
    ) { target in
        { _ in [.variantDictionary(await target.unanswered()?.dbusEntries ?? ["answering": .boolean(true)])] }
    }
}

extension AdvertiserClient {
    /// Since when BlueZ has not answered (a call has waited half a second or more, or timed
    /// out with none answered since), as the daemon says; the call itself is not said (`call`
    /// is empty). Nil while BlueZ answers.
    public func unanswered() throws -> UnansweredCall? {
        try call(.stack)[0].variantDictionary.flatMap { UnansweredCall(stack: $0) }
    }
}
