import Peripheral

extension PeripheralError {
    /// What `body` throws as a ``PeripheralError``: the module throws ``PeripheralError`` only,
    /// or `CancellationError` when its caller gave up (a timeout).
    static func caught<T>(_ body: () async throws -> T) async throws(PeripheralError) -> T {
        do {
            return try await body()
        } catch let error as PeripheralError {
            throw error
        } catch {
            throw PeripheralError(.timeout, "gave up waiting: \(error)")
        }
    }
}

extension Duration {
    /// The duration in seconds, with its fraction: what the control API's replies carry.
    var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
