public import Peripheral

/// Whether bluetoothd answers, from the manager's own record of the calls it sent
/// (`waiting`, kept by `callBlueZ`).
extension BlueZPeripheralManager: StackAnswering {
    /// The oldest call to bluetoothd still waiting after `UnansweredCall.countedAfter`.
    public func unanswered() -> UnansweredCall? {
        let now = ContinuousClock.now
        guard let (_, oldest) = waiting.min(by: { $0.key < $1.key }), now - oldest.sent >= UnansweredCall.countedAfter else { return nil }
        var call = oldest.call
        call.waited = now - oldest.sent
        return call
    }
}
