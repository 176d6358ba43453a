public import Peripheral

/// What the module knows about one thing it keeps registered with the stack: an advertisement,
/// or the GATT application.
public struct RegistrationStatus<Instant: InstantProtocol & Sendable>: Sendable, Hashable {
    /// Where a registration is: one phase at a time, each with what only it needs.
    public enum Phase: Sendable, Hashable {
        /// Not registered, and not meant to be.
        case off
        /// Registered with the stack under this identity, on this adapter: an advertisement on
        /// air, the GATT application served.
        case on(RegistrationID, adapter: String)
        /// A transient failure; the next attempt is at that instant. `failures` counts the
        /// attempts that failed in a row (the backoff grows with it).
        case retrying(at: Instant, failures: Int)
        /// Waiting for BlueZ or for an adapter that can advertise; an event brings it back.
        case waiting
        /// Off air because of a link on this adapter: the connection took it off air and the
        /// controller refused it again beside the link. Registered again when the adapter's
        /// last central has left. An advertisement's only.
        case paused(adapter: String)
        /// Refused for good (e.g. BlueZ could not parse it); waits for a new `on` (an
        /// advertisement) or a new configuration (the GATT application).
        case failed(PeripheralError)
    }

    /// Whether it should be registered.
    public var desired: Bool
    /// Where it is, or why it is not registered.
    public var phase: Phase
    /// The last error, kept until the next success.
    public var lastError: PeripheralError?
    /// When `phase` last changed.
    public var since: Instant
    /// The fields BlueZ accepted at the last registration but does not act on, named as in the
    /// config file (`Advertisement.fieldsIgnored(on:)`); an advertisement's only.
    public var ignored: [String] = []
    /// What the last audit found on its adapter and could not repair, while it is on air there
    /// (``BluetoothModule/discrepancies()``); nil when BlueZ agrees. An advertisement's only.
    public var mismatch: String?
    /// The address of the adapter it was last registered on (`Adapter1.Address`), where BlueZ
    /// said: the name (hci0) can change between boots, the address stays with the controller.
    public var adapterAddress: String?

    /// A status.
    public init(desired: Bool, phase: Phase, lastError: PeripheralError? = nil, since: Instant) {
        self.desired = desired
        self.phase = phase
        self.lastError = lastError
        self.since = since
    }
}

extension RegistrationStatus.Phase {
    /// The registration's identity when registered.
    var id: RegistrationID? {
        if case .on(let id, _) = self { id } else { nil }
    }

    /// How many attempts failed in a row, when retrying.
    var failures: Int? {
        if case .retrying(_, let failures) = self { failures } else { nil }
    }
}
