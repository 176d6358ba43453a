public import Peripheral
import Synchronization

/// The mock's ``LinkManaging``: each call recorded, answered as scripted.
extension MockPeripheralManager: LinkManaging {
    /// Records the call; answers as ``scriptDisconnect(_:)`` says.
    public func disconnect(_ central: String, adapter: String) async throws {
        try await answer("disconnect(\(central), adapter: \(adapter))", \.disconnect) { $0.disconnected.append((central, adapter)) }
    }

    /// What ``scriptNotificationsDropped(_:)`` said last; none before.
    public func notificationsDropped() async -> [String: Int] {
        state.withLock { $0.dropped }
    }

    /// Makes ``notificationsDropped()`` answer `dropped`.
    public func scriptNotificationsDropped(_ dropped: [String: Int]) {
        state.withLock { $0.dropped = dropped }
    }
}
