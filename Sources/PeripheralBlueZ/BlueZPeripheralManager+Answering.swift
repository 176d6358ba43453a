public import Peripheral

/// Whether bluetoothd answers, from the manager's own record of the calls it sent
/// (`waiting` and `silentSince`, kept by `callBlueZ`).
extension BlueZPeripheralManager: StackAnswering {
    /// The oldest call to bluetoothd still waiting after `UnansweredCall.countedAfter`, or that
    /// it let time out, answering none since (`silentSince`).
    public func unanswered() -> UnansweredCall? {
        let now = ContinuousClock.now
        guard let oldest = (Array(waiting.values) + [silentSince].compactMap { $0 }).min(by: { $0.sent < $1.sent }),
              now - oldest.sent >= UnansweredCall.countedAfter else { return nil }
        var call = oldest.call
        call.waited = now - oldest.sent
        return call
    }
}
