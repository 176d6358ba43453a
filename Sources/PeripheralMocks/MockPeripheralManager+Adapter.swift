public import Peripheral
import Synchronization

/// The mock's ``AdapterManaging``: each call recorded, answered as scripted.
extension MockPeripheralManager: AdapterManaging {
    /// Records the call; answers as ``scriptAdapters(_:)`` says.
    public func adapters() async throws -> [AdapterCapabilities] {
        try await answer("adapters()", \.adapters) { $0.adapters += 1 }
    }

    /// Records the call; answers as ``scriptPowerOn(_:)`` says.
    public func powerOn(adapter: String) async throws {
        try await answer("powerOn(adapter: \(adapter))", \.powerOn) { $0.poweredOn.append(adapter) }
    }

    /// Records the call; answers as ``scriptSetAlias(_:)`` says.
    public func setAlias(_ alias: String, adapter: String) async throws {
        try await answer("setAlias(\(alias), adapter: \(adapter))", \.setAlias) { $0.aliases.append((alias, adapter)) }
    }

    /// A stream of what ``emit(_:)`` delivers; throws what ``failEvents(with:)`` set.
    public func events() async throws -> AsyncStream<PeripheralEvent> {
        let (stream, continuation) = AsyncStream<PeripheralEvent>.makeStream()
        let failure: PeripheralError? = state.withLock { state in
            if state.eventsFailure == nil { state.listeners.append(continuation) }
            return state.eventsFailure
        }
        if let failure { throw failure }
        return stream
    }
}
