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
