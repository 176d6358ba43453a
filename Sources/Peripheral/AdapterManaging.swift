/// The adapters: what each supports, its power and its alias, and the stack's events.
///
/// A capability of a Bluetooth stack (``PeripheralManaging``); the BlueZ manager and the mock
/// each conform to it in a file of its own.
public protocol AdapterManaging: Sendable {
    /// The adapters that can advertise, with what each supports.
    func adapters() async throws -> [AdapterCapabilities]

    /// Powers an adapter on.
    /// - Throws: ``PeripheralError``; `notPowered` when the stack is changing the adapter's
    ///   power already (its Powered event says when that is done).
    func powerOn(adapter: String) async throws

    /// Sets the adapter's alias (BlueZ's `Adapter1.Alias`): the name centrals are shown once
    /// connected (GAP's Device Name), for every program that uses the adapter; the stack keeps
    /// it across restarts. An empty alias puts the system's name back.
    func setAlias(_ alias: String, adapter: String) async throws

    /// The events from now on, for one consumer.
    /// - Throws: when they cannot be watched (the bus refused a subscription): without them,
    ///   nothing would be put back on air after bluetoothd restarts, so the caller must not go
    ///   on as if all were well.
    func events() async throws -> AsyncStream<PeripheralEvent>
}
