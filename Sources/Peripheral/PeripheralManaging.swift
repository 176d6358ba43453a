/// The identity of something registered with the stack (an advertisement, the GATT
/// application), as the implementation that registered it knows it (for BlueZ, the exported
/// object path), and the run of the stack that holds it.
public struct RegistrationID: Hashable, Sendable, CustomStringConvertible {
    /// The identity's text, e.g. `/org/bleadvd/advertisement/3` or `/org/bleadvd/gatt/app1`.
    public let rawValue: String
    /// The run of the stack's daemon that answered the registration: it goes with that run.
    public let generation: StackGeneration

    /// An identity.
    public init(_ rawValue: String, generation: StackGeneration = .first) {
        self.rawValue = rawValue
        self.generation = generation
    }

    /// The identity's text.
    public var description: String { rawValue }
}

/// What a `PeripheralManaging` registers with the stack. Every kind is registered and
/// unregistered the same way (``RegistrationManaging/register(_:on:)``,
/// ``RegistrationManaging/unregister(_:)``); a new kind is a case here and its registration in
/// each manager.
public enum RegistrationSubject: Sendable {
    /// An advertisement, on air once registered.
    case advertisement(Advertisement)
    /// GATT services: centrals that connect find them once registered. Writes are checked
    /// against each characteristic's format before they are taken; what centrals do is reported
    /// as ``PeripheralEvent/gatt(_:)``.
    case application(GATTApplication)
    /// The pairing agent, the stack's default, answering its requests with `decider`. With an
    /// agent the stack lets centrals bond; ``BondManaging/setPairable(_:adapter:)``
    /// closes the adapter again (the stack may reopen it whenever an agent registers, so call
    /// it after this). The stack holds it for every adapter.
    case agent(PairingMethod, decider: any PairingDecider)

    /// A registration's kind, without what it carries: the one list of kinds, from which the
    /// domain's keys, the managers' records and the errors about a registration derive.
    public enum Kind: Int, Hashable, Comparable, Sendable, CaseIterable {
        /// An advertisement.
        case advertisement
        /// The GATT application.
        case application
        /// The pairing agent.
        case agent

        /// Advertisements first, then the application, then the agent.
        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }

    /// Its kind.
    public var kind: Kind {
        switch self {
        case .advertisement: .advertisement
        case .application: .application
        case .agent: .agent
        }
    }
}

/// Something that happened below the domain: BlueZ, adapters, or an advertisement BlueZ dropped.
/// Each event about the stack names the run of its daemon it came from (``StackGeneration``):
/// events reach the domain after the calls it made meanwhile, which a later run may have
/// answered, so what a run's event takes away is exactly what that run held.
public enum PeripheralEvent: Hashable, Sendable {
    /// BlueZ appeared on the bus (started or restarted): this run answers calls from now on.
    case bluezAppeared(StackGeneration = .first)
    /// BlueZ left the bus: nothing this run had registered is on air any more.
    case bluezVanished(StackGeneration = .first)
    /// An adapter that can advertise appeared in this run.
    case adapterAdded(String, StackGeneration = .first)
    /// An adapter went away, with everything this run had registered on it.
    case adapterRemoved(String, StackGeneration = .first)
    /// An adapter was powered on or off, as this run reports it.
    case adapterPowered(String, Bool, StackGeneration = .first)
    /// BlueZ removed an advertisement itself and said so with `Release` (its timeout ran out,
    /// the adapter went away, bluetoothd is stopping).
    case released(RegistrationID)
    /// A connected central read, wrote, subscribed to or unsubscribed from a characteristic.
    case gatt(GATTEvent)
    /// A central finished pairing with an adapter (its address, the adapter).
    case paired(central: String, adapter: String)
    /// A central's bond with an adapter ended in BlueZ, by whoever ended it (any local user may,
    /// by Debian's BlueZ policy): its device was removed, or it was unpaired (its address, the
    /// adapter, how). A device object that goes with its adapter or its bluetoothd is no such
    /// end: BlueZ keeps that bond.
    case bondEnded(central: String, adapter: String, BondEnd)
    /// A link with an adapter came up (the other side's address, the adapter): a connection
    /// from one of the adapter's connectable advertisements, which takes advertising off air
    /// (the controller ends the set it came from; a controller without extended advertising
    /// stops advertising altogether), or one the box made as a central, which D-Bus does not
    /// tell apart.
    case connected(central: String, adapter: String)
    /// A central's link with an adapter ended (its address, the adapter): what it left half
    /// done (a command frame written in pieces) is to be dropped.
    case disconnected(central: String, adapter: String)
    /// An adapter's `Pairable` changed (by bleadvd, or by any other program: BlueZ's signal
    /// does not say who).
    case pairable(adapter: String, Bool)
}

/// How a bond ended in BlueZ (``PeripheralEvent/bondEnded(central:adapter:_:)``).
public enum BondEnd: String, Hashable, Sendable {
    /// Its device was removed (`Adapter1.RemoveDevice`), keys and all.
    case removed
    /// It was unpaired: the device's `Paired` (or `Bonded`) turned false.
    case unpaired
}

/// What the domain needs from a Bluetooth stack to keep advertisements on air, in capabilities
/// (each a protocol of its own: ``AdapterManaging``, ``RegistrationManaging``, ``GATTServing``,
/// ``LinkManaging``, ``BondManaging``), so that a component asks for the one it uses. The Linux
/// implementation drives BlueZ over D-Bus (`PeripheralBlueZ`); `PeripheralMocks` has a mock
/// that counts every call, for tests; each conforms to each capability in a file of its own.
public protocol PeripheralManaging: AdapterManaging, RegistrationManaging, GATTServing, LinkManaging, BondManaging, StackAnswering {}
