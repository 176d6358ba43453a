public import Peripheral

/// Whether bluetoothd answers, from the manager's own record of the calls it sent
/// (`waiting`, kept by `callBlueZ`).
extension BlueZPeripheralManager: StackAnswering {
    /// The oldest call to bluetoothd still waiting after half a second: less than the 0.8 s a
    /// listing waits for the bonds before it answers from what bleadvd knows, so that a
    /// listing so answered is always said to be.
    public func unanswered() -> UnansweredCall? {
        let now = ContinuousClock.now
        guard let (_, oldest) = waiting.min(by: { $0.key < $1.key }), now - oldest.sent >= .milliseconds(500) else { return nil }
        var call = oldest.call
        call.waited = now - oldest.sent
        return call
    }
}
