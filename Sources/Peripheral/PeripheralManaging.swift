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
/// unregistered the same way (``PeripheralManaging/register(_:on:)``,
/// ``PeripheralManaging/unregister(_:)``); a new kind is a case here and its registration in
/// each manager.
public enum RegistrationSubject: Sendable {
    /// An advertisement, on air once registered.
    case advertisement(Advertisement)
    /// GATT services: centrals that connect find them once registered. Writes are checked
    /// against each characteristic's format before they are taken; what centrals do is reported
    /// as ``PeripheralEvent/gatt(_:)``.
    case application(GATTApplication)
    /// The pairing agent, the stack's default, answering its requests with `decider`. With an
    /// agent the stack lets centrals bond; ``PeripheralManaging/setPairable(_:adapter:)``
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

/// What the domain needs from a Bluetooth stack to keep advertisements on air. The Linux
/// implementation drives BlueZ over D-Bus (`PeripheralBlueZ`); `PeripheralMocks` has a mock
/// that counts every call, for tests.
public protocol PeripheralManaging: Sendable {
    /// The adapters that can advertise, with what each supports.
    func adapters() async throws -> [AdapterCapabilities]

    /// Powers an adapter on.
    /// - Throws: ``PeripheralError``; `notPowered` when the stack is changing the adapter's
    ///   power already (its Powered event says when that is done).
    func powerOn(adapter: String) async throws

    /// Registers `subject` on an adapter; returns when the stack holds it (an advertisement on
    /// air, an application's services read, the agent answering). Registering the agent when
    /// this manager's agent is registered already returns its id.
    /// - Throws: ``PeripheralError`` with the stack's reason translated.
    func register(_ subject: RegistrationSubject, on adapter: String) async throws -> RegistrationID

    /// Unregisters what `id` names, whatever its kind: an advertisement leaves the air, an
    /// application's services are no longer found, the agent takes no new bonds. One the stack
    /// no longer holds counts as unregistered.
    /// - Throws: ``PeripheralError`` `notRegistered` for an identity this manager did not hand out.
    func unregister(_ id: RegistrationID) async throws

    /// Changes a registered advertisement in place, without taking it off air.
    func updateAdvertisement(_ id: RegistrationID, to advertisement: Advertisement) async throws

    /// Sends a registered advertisement to the controller again, unchanged. Without extended
    /// advertising the kernel shows an adapter's advertisements in turn from a timer, which a
    /// link ending as a turn ends can leave unarmed (the turns then stop on one advertisement);
    /// one sent again arms it. Otherwise nothing changes on air, or the advertisement on air
    /// begins its turn again.
    /// - Throws: ``PeripheralError`` `notRegistered` for an unknown advertisement.
    func refreshAdvertisement(_ id: RegistrationID) async throws

    /// Registers an advertisement again if BlueZ no longer holds it although it never said so.
    /// BlueZ 5.66 to 5.73 forget an advertisement whose in-place update the kernel refused,
    /// with no `Release`, no error and no signal: whatever was believed on air is then false.
    /// - Returns: true when BlueZ had dropped it and it is registered again; false when BlueZ
    ///   still held it (nothing changed).
    /// - Throws: ``PeripheralError`` when BlueZ could not be asked, or refused the registration.
    func reregisterIfDropped(_ id: RegistrationID) async throws -> Bool

    /// Changes a characteristic's value in place; subscribed centrals are notified (or
    /// indicated) of it.
    /// - Throws: ``PeripheralError`` `notRegistered` for an unknown application or characteristic.
    func updateValue(_ value: [UInt8], of characteristic: GATTCharacteristicID, in application: RegistrationID) async throws

    /// Answers centrals' reads of the characteristics ``GATTCharacteristic/answeredOnRead``
    /// marks with `answerer` from now on: each read at offset 0 asks it, and the rest of a long
    /// read is cut from that answer. Before this is called, they are answered from the value held.
    func answerReads(with answerer: any GATTReadAnswering) async

    /// Sets the adapter's alias (BlueZ's `Adapter1.Alias`): the name centrals are shown once
    /// connected (GAP's Device Name), for every program that uses the adapter; the stack keeps
    /// it across restarts. An empty alias puts the system's name back.
    func setAlias(_ alias: String, adapter: String) async throws

    /// Ends the link with `central` on the adapter (BlueZ's `Device1.Disconnect`).
    /// - Throws: ``PeripheralError`` `unknownName` when no such central is known to the adapter.
    func disconnect(_ central: String, adapter: String) async throws

    /// Whether the adapter takes new bonds (BlueZ's `Pairable`); bonds made already keep working.
    func setPairable(_ pairable: Bool, adapter: String) async throws

    /// The centrals bonded with the adapter, by address.
    func bonds(adapter: String) async throws -> [Bond]

    /// Removes the bond with `central` (and the stack's record of it).
    /// - Throws: ``PeripheralError`` `unknownName` when the adapter has no such central.
    func removeBond(_ central: String, adapter: String) async throws

    /// Compares what the stack holds with what this manager registered, adapter by adapter,
    /// and removes what it can name that nothing tracks any more (objects left exported,
    /// registrations whose unregistering got no answer).
    /// - Throws: ``PeripheralError`` when the stack cannot be asked.
    func audit() async throws -> [RegistrationAudit]

    /// The events from now on, for one consumer.
    /// - Throws: when they cannot be watched (the bus refused a subscription): without them,
    ///   nothing would be put back on air after bluetoothd restarts, so the caller must not go
    ///   on as if all were well.
    func events() async throws -> AsyncStream<PeripheralEvent>
}
