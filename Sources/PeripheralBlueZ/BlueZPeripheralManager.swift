public import DBus
import Events
public import Logging
public import Peripheral

/// The Linux `PeripheralManaging`: advertisements registered with BlueZ (bluetoothd) over
/// D-Bus. Each advertisement is an `org.bluez.LEAdvertisement1` object this connection exports;
/// BlueZ reads it back during `RegisterAdvertisement`, so registration is an async pending call
/// while the connection keeps serving those call-backs.
///
/// Every call goes to one bluetoothd: the owner of `org.bluez` that the events announced last
/// (its unique name, never the well-known one, and without bus activation). So a call can
/// never reach a bluetoothd the events have not announced yet, and every registration is
/// known to the run that answered it (`StackGeneration`): when that run leaves the bus,
/// exactly its registrations are forgotten. Without an owner, calls fail at once.
///
/// The manager runs on its connection's executor: no hop between the two.
public actor BlueZPeripheralManager: PeripheralManaging {
    /// How long a call to BlueZ may take (10 s unless told). Registration waits on the controller.
    let callTimeout: Duration
    /// A call that takes this long is logged (notice), answered or not.
    package static let slowAnswer: Duration = .seconds(1)

    let connection: DBusConnection
    let logger: Logger
    /// What is exported and registered, advertisements and GATT applications, by root path.
    var exports: [DBusObjectPath: Export] = [:]
    var nextObject = 0
    var consumers: [Int: AsyncStream<PeripheralEvent>.Continuation] = [:]
    var nextConsumer = 0
    var monitor: Task<Void, Never>?
    /// Checks whether a device's removal ended a bond (``DeviceRemoval``), one after the other,
    /// off the monitor: bluetoothd may take its whole call timeout to answer.
    var bondChecks: Task<Void, Never>?
    /// The removals waiting for their check.
    var removals: AsyncStream<DeviceRemoval>.Continuation?
    /// The bluetoothd calls go to, as the events announced it; nil while none owns `org.bluez`.
    var bluetoothd: StackGeneration?
    /// How many owners of `org.bluez` this manager has seen.
    var ownersSeen = 0
    /// Objects exported for a registration under way (advertisements, applications' roots).
    var registering: Set<DBusObjectPath> = []
    /// Long reads under way: the value a central's read at offset 0 got, where it is longer
    /// than one response, by characteristic and central; its reads at later offsets (ATT's
    /// Read Blob) come from it, so a `set` in between cannot tear what it reads.
    var longReads: [LongRead: [UInt8]] = [:]
    /// Registrations given up whose unregistering got no answer: BlueZ may still hold them,
    /// so the audit asks again.
    var retired: [DBusObjectPath: (adapter: String, generation: StackGeneration)] = [:]

    /// The running kernel's release, to name known failures (``KnownFailures``).
    let kernelRelease: String
    /// Whether a central (its address) may read and write characteristics whose security is not
    /// none; any other is answered `NotAuthorized`, whatever its link's encryption.
    let admits: @Sendable (String) -> Bool
    /// The centrals refused a secured characteristic whose refusal was logged (once each, at
    /// most ``maximumLongReads`` kept).
    var refusalsLogged: Set<String> = []
    /// The centrals connected to each adapter, each with whether it may be bonded; the secured
    /// characteristics whose change waits for those bleadvd does not admit to leave (+Links).
    var links: [String: [String: Bool]] = [:]
    var heldChanges: [DBusObjectPath: (adapter: String, id: GATTCharacteristicID)] = [:]
    /// The calls to bluetoothd waiting for their answer, in the order sent (``unanswered()``).
    var waiting: [Int: (call: UnansweredCall, sent: ContinuousClock.Instant)] = [:]
    var callsSent = 0
    /// The oldest call bluetoothd let time out, while it has answered none since: silent since
    /// then, though no call may wait now; a probe waits for its answer (``listenForBluetoothd()``).
    var silentSince: (call: UnansweredCall, sent: ContinuousClock.Instant)?
    var listening: Task<Void, Never>?
    /// Each central's notification socket, by characteristic and central; each adapter's
    /// BlueZ release, as the last `GetManagedObjects` showed it (+Sockets).
    var notifySockets: [DBusObjectPath: [String: NotifySocket]] = [:]
    var releases: [String: (generation: StackGeneration, release: StackRelease)] = [:]

    /// A manager on `connection` (the system bus in production).
    /// - Parameters:
    ///   - connection: the bus bluetoothd is on.
    ///   - logger: where what happens with BlueZ is logged.
    ///   - kernelRelease: the kernel's release as `uname -r` prints it (nil: the running one), to
    ///     name failures known on some kernels.
    ///   - admits: whether a central (its address) may read and write characteristics whose
    ///     security is not none. BlueZ checks the link's encryption alone, and any local user
    ///     may let a central bond through BlueZ's own API (its default bus policy): bleadvd
    ///     admits the centrals bonded in its pairing windows or adopted by root. Every one, by
    ///     default.
    ///   - callTimeout: how long a call to BlueZ may take before it counts as unanswered.
    public init(
        connection: DBusConnection, logger: Logger = Logger(label: "bleadvd.bluez"),
        kernelRelease: String? = nil, admits: @escaping @Sendable (String) -> Bool = { _ in true },
        callTimeout: Duration = .seconds(10)
    ) {
        self.callTimeout = callTimeout
        self.connection = connection
        self.logger = logger
        self.kernelRelease = kernelRelease ?? KnownFailures.runningKernel
        self.admits = admits
    }

    /// Runs on the connection's executor, so calls to the connection need no thread hop.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { connection.unownedExecutor }

    // MARK: RegistrationManaging (the audit in +Audit)

    /// Exports what `subject` needs and registers it with the current bluetoothd: an
    /// advertisement's `LEAdvertisement1` object with its adapter's `LEAdvertisingManager1`, a
    /// GATT application's objects with its adapter's `GattManager1`, or the pairing agent with
    /// `AgentManager1` (bluetoothd holds it for every adapter).
    public func register(_ subject: RegistrationSubject, on adapter: String) async throws -> RegistrationID {
        switch subject {
        case .advertisement(let advertisement): try await registerAdvertisement(advertisement, on: adapter)
        case .application(let application): try await registerApplication(application, on: adapter)
        case .agent(let method, let decider): try await registerAgent(method, decider: decider)
        }
    }

    /// Unregisters what `id` names with the bluetoothd that holds it, from the manager that
    /// registered it, and removes its objects. One BlueZ no longer has (or whose adapter or bluetoothd is gone)
    /// counts as unregistered. An advertisement whose unregistering got no definite answer is
    /// kept for the audit to ask again.
    public func unregister(_ id: RegistrationID) async throws {
        guard let path = try? DBusObjectPath(id.rawValue), let export = exports[path], export.generation == id.generation else {
            throw PeripheralError(.notRegistered, "\(id) is not registered")
        }
        // Forget it first: whatever BlueZ answers, it is no longer ours to keep.
        exports[path] = nil
        endSockets(under: path)
        do {
            let call = try export.unregistration()
            _ = try await callBlueZ(on: export.generation, path: call.path, call.method, [.objectPath(path)], expecting: .empty, about: call.about)
        } catch let error as PeripheralError where [.notRegistered, .bluezUnavailable, .noAdapter].contains(error.code) {
            logger.debug("\(path) was no longer registered: \(error.message)")
        } catch {
            // No definite answer: BlueZ may still hold an advertisement, and the audit asks again.
            if export.advertisement != nil { retired[path] = (export.adapter, export.generation) }
            await export.unexport(path, from: connection)
            throw error
        }
        // Here, not later: what registers next at the same path (the agent) keeps its object.
        await export.unexport(path, from: connection)
    }

    /// Exports the advertisement as an `LEAdvertisement1` object and registers it with the
    /// current bluetoothd; returns once it replied (after reading the object back). A refused
    /// registration leaves no object; one whose outcome is unknown (the caller gave up, or no
    /// reply came in time) is unregistered, so that BlueZ cannot keep one nobody tracks.
    func registerAdvertisement(_ advertisement: Advertisement, on adapter: String) async throws -> RegistrationID {
        let adapterPath = try BlueZ.adapterPath(adapter)
        let generation = try await currentBluetoothd()
        let path = try makeObjectPath()
        registering.insert(path)
        defer { registering.remove(path) }
        do {
            // BlueZ asks the object manager at the path first; it lists no children, so BlueZ
            // reads the properties with GetAll.
            // Only that bluetoothd may call them: a local process could otherwise set TxPower.
            await connection.exportObjectManager(at: path, caller: generation.name)
            try await connection.export(advertisementInterfaces(for: advertisement, at: path), at: path, caller: generation.name)
        } catch let error as DBusError {
            await connection.unexport(path)
            throw PeripheralError(.invalid, "cannot export the advertisement: \(error.message)")
        }
        let started = ContinuousClock.now
        do {
            _ = try await callBlueZ(
                on: generation, path: adapterPath, .registerAdvertisement, [.objectPath(path), .variantDictionary([:])], expecting: .empty)
        } catch var error as PeripheralError where error.code != .timeout {
            // Nothing is left behind: BlueZ has no registration, so the object goes too.
            await connection.unexport(path)
            if error.code == .failed, let cause = KnownFailures.registrationFailure(onKernel: kernelRelease) {
                error.message += "; likely cause: " + cause
            }
            throw error
        } catch {
            await withdraw(path, from: generation, adapter: adapter, because: "its registration got no answer (\(error))")
            throw error
        }
        guard bluetoothd == generation else {
            // That bluetoothd left while it answered: the registration went with it.
            await connection.unexport(path)
            throw PeripheralError(.bluezUnavailable, "bluetoothd \(generation) left the bus while registering the advertisement")
        }
        exports[path] = Export(adapter: adapter, generation: generation, objects: .advertisement(advertisement))
        logger.debug("registered \(path) on \(adapter) of bluetoothd \(generation) in \(ContinuousClock.now - started)")
        return RegistrationID(path.rawValue, generation: generation)
    }

    /// Undoes a registration whose outcome is unknown: removes the object and asks the
    /// bluetoothd it was sent to to unregister it. The call goes out even from a cancelled task;
    /// whatever it answers, nothing of ours is left that bleadvd does not track.
    func withdraw(_ path: DBusObjectPath, from generation: StackGeneration, adapter: String, because reason: String) async {
        await connection.unexport(path)
        let outcome: String
        do {
            _ = try await callBlueZ(
                on: generation, path: try BlueZ.adapterPath(adapter), .unregisterAdvertisement, [.objectPath(path)], expecting: .empty)
            outcome = "BlueZ had registered it, and unregistered it"
        } catch let error as PeripheralError where error.code == .notRegistered {
            outcome = "BlueZ had not registered it"
        } catch {
            outcome = "asked BlueZ to unregister it (\(error)); the audit asks again"
            retired[path] = (adapter, generation)
        }
        logger.warning("\(path.rawValue) withdrawn: \(reason); \(outcome)")
    }

    /// Changes the object's properties and says so with `PropertiesChanged`: BlueZ puts the new
    /// data on air in place (`updateSteps(from:to:)`), whatever changes, even into another
    /// advertisement altogether (a rotation's turn keeps its slot this way): a property that
    /// appears is announced as changed, one that goes as invalidated, which BlueZ's parsers take
    /// as cleared (src/advertising.c's `parse_*` with no value, 5.66 to 5.87 alike).
    /// - Throws: `PeripheralError` `rejected` for a structured scan response field BlueZ
    ///   follows only with `--experimental`; `notRegistered` for an unknown advertisement.
    public func updateAdvertisement(_ id: RegistrationID, to advertisement: Advertisement) async throws {
        let (path, registration) = try registered(id)
        let old = registration.advertisement!.bluezProperties
        let new = advertisement.bluezProperties
        // BlueZ (5.80 to 5.87 at least) follows a change of the scan response's structured
        // fields only when bluetoothd runs with --experimental, which the bus does not tell:
        // a new registration puts them on air everywhere. Its raw ScanResponseData is followed.
        if let field = Self.followedOnlyWithExperimental.first(where: { old[$0] != new[$0] }) {
            throw PeripheralError(.rejected, "BlueZ follows a change of \(field) only with --experimental; it needs a new registration")
        }
        let interface = BlueZ.advertisementInterface
        for step in Self.updateSteps(from: old, to: new) {
            switch step {
            case .remove(let name):
                try await connection.removeProperty(name, of: interface, at: path)
                // Without a power asked, BlueZ's report of the chosen one is still taken.
                if name == "TxPower" { try await connection.putProperty(txPowerReport(at: path), of: interface, at: path) }
            case .set(let name) where old[name] == nil:
                try await connection.putProperty(advertisementProperty(name, new[name]!, at: path), of: interface, at: path)
            case .set(let name):
                try await connection.setProperty(name, of: interface, at: path, to: new[name]!, always: true)
            case .refresh:
                try await connection.setProperty("Type", of: interface, at: path, to: new["Type"]!, always: true)
            }
        }
        // BlueZ may have released it meanwhile: then there is nothing left to record.
        guard exports[path] != nil else {
            throw PeripheralError(.notRegistered, "\(id) was released by BlueZ while it was being updated")
        }
        exports[path]?.objects = .advertisement(advertisement)
    }

    /// The properties whose change BlueZ ignores unless bluetoothd runs with `--experimental`
    /// (src/advertising.c's parsers marked experimental, 5.80 to 5.87).
    static let followedOnlyWithExperimental = [
        "ScanResponseManufacturerData", "ScanResponseServiceData", "ScanResponseServiceUUIDs", "ScanResponseSolicitUUIDs",
    ]

    /// Says `PropertiesChanged` of the advertisement's `Type`, its value unchanged: BlueZ sends
    /// an advertisement to the kernel again whenever it is told that a property changed,
    /// whatever the value (5.66 and 5.82 alike).
    public func refreshAdvertisement(_ id: RegistrationID) async throws {
        let (path, registration) = try registered(id)
        try await connection.setProperty(
            "Type", of: BlueZ.advertisementInterface, at: path, to: registration.advertisement!.bluezProperties["Type"]!, always: true)
    }

    /// Asks BlueZ to register the object again: `AlreadyExists` means BlueZ still holds it.
    public func reregisterIfDropped(_ id: RegistrationID) async throws -> Bool {
        let (path, registration) = try registered(id)
        do {
            _ = try await callBlueZ(
                on: registration.generation, path: try BlueZ.adapterPath(registration.adapter), .registerAdvertisement, [.objectPath(path), .variantDictionary([:])], expecting: .empty)
        } catch let error as PeripheralError where error.code == .alreadyRegistered {
            return false
        }
        return true
    }

    /// One step of an in-place update: BlueZ refreshes the advertisement after each.
    package enum UpdateStep: Hashable, Sendable {
        /// The property goes (announced invalidated): BlueZ clears it.
        case remove(String)
        /// The property takes its new value (announced changed), appearing if it was not there.
        case set(String)
        /// `Type` announced unchanged: BlueZ sends the advertisement on as it stands (after a
        /// last step BlueZ does not send on by itself: an interval or TxPower that goes).
        case refresh
    }

    /// The steps of an update, in the order BlueZ is told of them. BlueZ sends the advertisement
    /// to the kernel after each one, so every step must be valid on its own:
    /// - what shrinks the data goes before what grows it (by ``bytesOnAir(_:_:)``), so that no
    ///   step holds more than the larger of the two advertisements: a step over the controller's
    ///   length ends the advertisement (5.66 to 5.73 free it without a word, and with extended
    ///   advertising crash in `add_client_complete`);
    /// - of the two intervals, the one that keeps MinInterval <= MaxInterval goes first (lowering
    ///   both must not send a minimum above the old maximum; controllers refuse that);
    /// - `Includes` clears every flag BlueZ keeps beside it, the secondary channel's among them
    ///   (`parse_includes` sets `client->flags = 0`), so `SecondaryChannel` is sent again after it;
    /// - an interval or TxPower that goes is not sent on by BlueZ (its parser answers false): a
    ///   refresh follows when nothing else does.
    package static func updateSteps(from old: [String: DBusValue], to new: [String: DBusValue]) -> [UpdateStep] {
        let changed = Set(old.keys).union(new.keys).filter { old[$0] != new[$0] }
        var names = changed.sorted { a, b in
            let da = bytesOnAir(a, new[a]) - bytesOnAir(a, old[a]), db = bytesOnAir(b, new[b]) - bytesOnAir(b, old[b])
            return da != db ? da < db : a < b
        }
        if let min = names.firstIndex(of: "MinInterval"), let max = names.firstIndex(of: "MaxInterval"),
           new["MinInterval"] != nil, new["MaxInterval"] != nil {
            // Minimum first when it fits under the old maximum; else the maximum first, which
            // then fits over the old minimum (new minimum > old maximum >= old minimum).
            let minimumFirst = (new["MinInterval"]?.uint32 ?? 0) <= (old["MaxInterval"]?.uint32 ?? 0)
            if minimumFirst != (min < max) { names.swapAt(min, max) }
        }
        if names.contains("Includes"), new["SecondaryChannel"] != nil {
            names.removeAll { $0 == "SecondaryChannel" }
            // Includes' place after the removal: a SecondaryChannel sorted before it moved it.
            names.insert("SecondaryChannel", at: names.firstIndex(of: "Includes")! + 1)
        }
        var steps = names.map { new[$0] == nil ? UpdateStep.remove($0) : .set($0) }
        if let last = steps.last, [.remove("MinInterval"), .remove("MaxInterval"), .remove("TxPower")].contains(last) {
            steps.append(.refresh)
        }
        return steps
    }

    /// About how many bytes a property puts into the advertising data or the scan response
    /// (each AD structure's length and type, and its data); 0 for one that adds none, or that
    /// is absent. Only the sign of a change's difference orders an update's steps.
    package static func bytesOnAir(_ name: String, _ value: DBusValue?) -> Int {
        guard let value else { return 0 }
        func uuidBytes(_ uuid: String) -> Int {
            let base = "-0000-1000-8000-00805f9b34fb"
            guard uuid.lowercased().hasSuffix(base) else { return uuid.count <= 4 ? 2 : uuid.count <= 8 ? 4 : 16 }
            return uuid.hasPrefix("0000") ? 2 : 4
        }
        let entries = value.dictionaryEntries ?? []
        switch name {
        case "ServiceUUIDs", "SolicitUUIDs", "ScanResponseServiceUUIDs", "ScanResponseSolicitUUIDs":
            let sizes = (value.stringArray ?? []).map(uuidBytes)
            return Dictionary(grouping: sizes, by: { $0 }).values.reduce(0) { $0 + 2 + $1.reduce(0, +) }
        case "ManufacturerData", "ScanResponseManufacturerData":
            return entries.reduce(0) { $0 + 4 + ($1.value.variantValue?.bytes?.count ?? 0) }
        case "ServiceData", "ScanResponseServiceData":
            return entries.reduce(0) { $0 + 2 + uuidBytes($1.key.string ?? "") + ($1.value.variantValue?.bytes?.count ?? 0) }
        case "Data", "ScanResponseData":
            return entries.reduce(0) { $0 + 2 + ($1.value.variantValue?.bytes?.count ?? 0) }
        case "LocalName":
            return 2 + (value.string?.utf8.count ?? 0)
        case "Appearance":
            return 4
        case "Includes":
            return (value.stringArray ?? []).reduce(0) { $0 + ($1 == "tx-power" ? 3 : $1 == "appearance" ? 4 : 0) }
        case "Discoverable":
            return value.boolean == true ? 3 : 0
        default:
            return 0
        }
    }

    // MARK: Helpers

    /// The bluetoothd calls go to now: the owner of `org.bluez` the events announced last.
    /// - Throws: `PeripheralError` `bluezUnavailable` when none owns it.
    func currentBluetoothd() async throws -> StackGeneration {
        if monitor == nil { try await startMonitoring() }
        guard let bluetoothd else {
            throw PeripheralError(.bluezUnavailable, "bluetoothd is not running (no org.bluez on the system bus)")
        }
        return bluetoothd
    }

    /// Calls one bluetoothd, by its unique name and without bus activation: if it has left the
    /// bus, the call fails at once rather than reaching another. Every failure becomes a
    /// `PeripheralError` about `subject`.
    func callBlueZ(
        on generation: StackGeneration, path: DBusObjectPath, _ method: BlueZ.Method,
        _ arguments: [DBusValue] = [], expecting: DBusSignature? = nil, about subject: BlueZSubject = .registration(.advertisement),
        timeout: Duration? = nil
    ) async throws -> [DBusValue] {
        // bluetoothd answers in milliseconds: a second is a stack that is stuck or slow, and the
        // module's other work waits behind the call.
        if let refusal = BlueZ.refusal(of: method, at: path, arguments) { throw PeripheralError(.invalid, refusal) }
        let started = ContinuousClock.now
        callsSent += 1
        let number = callsSent
        let sentAt = WallClock.now
        waiting[number] = (UnansweredCall(call: method.member, sentAt: sentAt, waited: .zero), started)
        // Said while it waits, not only once answered: a control call or a stop that waits
        // behind it is explained in the journal at the time.
        // On the connection's loop, with its timer: bleadvd keeps to one thread.
        let stillWaiting = Task(executorPreference: connection.eventLoop) { [logger, clock = LoopClock(on: connection.eventLoop)] () async in
            guard (try? await clock.sleep(for: Self.slowAnswer)) != nil else { return }
            logger.notice("still waiting for bluetoothd to answer \(method.member) on \(path) since \(WallClock.time(of: sentAt))")
        }
        defer {
            waiting[number] = nil
            stillWaiting.cancel()
        }
        do {
            let reply = try await connection.call(
                destination: generation.name, path: path, interface: method.interface, member: method.member, arguments,
                expecting: expecting, timeout: timeout ?? callTimeout, autoStart: false)
            heard(method.member, on: path, since: started)
            return reply
        } catch let error as DBusError {
            let failure = PeripheralError(bluez: error, about: subject)
            if failure.code == .timeout, let call = waiting[number] {
                logger.notice("bluetoothd did not answer \(method.member) on \(path) in \(ContinuousClock.now - started)")
                if silentSince.map({ call.sent < $0.sent }) ?? true { silentSince = call }
                if listening == nil { listening = Task(executorPreference: connection.eventLoop) { await self.listenForBluetoothd() } }
            } else if !Self.busRefusals.contains(error.name) {
                heard(method.member, on: path, since: started)
            }
            throw failure
        }
    }

    /// The errors dbus-daemon gives in bluetoothd's place, which say nothing of whether it
    /// answers: a call past the bus's limits (it counts each call libdbus gave up on as waiting
    /// for its reply, 128 by default, so that a long silence reaches it), refused by its
    /// policy, or without its memory.
    private static let busRefusals: Set<DBusError.Name> = [.limitsExceeded, .accessDenied, .noMemory]

    /// An answer (a reply or an error) to a call sent at `started`, or bluetoothd gone from
    /// the bus: it is not silent, and the probe's call, should it still wait, is given up.
    private func heard(_ member: String, on path: DBusObjectPath, since started: ContinuousClock.Instant) {
        silentSince = nil
        listening?.cancel()
        listening = nil
        let took = ContinuousClock.now - started
        if took >= Self.slowAnswer { logger.notice("bluetoothd took \(took) to answer \(member) on \(path)") }
    }

    /// While bluetoothd is silent, one call that waits for its answer however long it takes
    /// (libdbus's infinite timeout): bleadvd may have nothing else to ask, and the silence must
    /// not outlast bluetoothd's. One call, not one every timeout: dbus-daemon keeps each call
    /// libdbus gave up on as waiting for its reply until its limit, and bleadvd's share of it
    /// is for its own work. Any answer from bluetoothd (``heard(_:on:since:)``, which gives this
    /// call up), its leaving the bus or the connection's end ends it; should the call end
    /// otherwise (the bus's refusal), it is sent again after `callTimeout`.
    private func listenForBluetoothd() async {
        let clock = LoopClock(on: connection.eventLoop)
        while silentSince != nil, !Task.isCancelled {
            guard let generation = bluetoothd else { silentSince = nil; break }
            _ = try? await callBlueZ(
                on: generation, path: BlueZ.root, .getManagedObjects, expecting: BlueZ.managedObjectsSignature, about: .registration(.agent),
                timeout: Self.untilAnswered)
            if silentSince != nil { try? await clock.sleep(for: callTimeout) }
        }
        // A probe given up (heard) is no longer `listening`, which may be a new one by now.
        if !Task.isCancelled { listening = nil }
    }

    /// No timeout: past 24 days `dbusMilliseconds` clamps to libdbus's `DBUS_TIMEOUT_INFINITE`.
    static let untilAnswered: Duration = .seconds(3_000_000)

    private func makeObjectPath() throws -> DBusObjectPath {
        nextObject += 1
        return try BlueZ.advertisementRoot.appending(String(nextObject))
    }

    /// The advertisement registered as `id`, and where.
    private func registered(_ id: RegistrationID) throws -> (DBusObjectPath, Export) {
        guard let path = try? DBusObjectPath(id.rawValue), let export = exports[path], export.generation == id.generation,
              export.advertisement != nil else {
            throw PeripheralError(.notRegistered, "\(id) is not registered")
        }
        return (path, export)
    }

    /// The exported interfaces of one advertisement: `LEAdvertisement1` with exactly its set
    /// properties, and `Release`. BlueZ (with extended advertising) sets `TxPower` to the power
    /// the controller chose: it is read-write when the advertisement asks for a power, and
    /// write-only otherwise, so that BlueZ's report is taken without the read-back (GetAll)
    /// turning into a request for that power.
    private func advertisementInterfaces(for advertisement: Advertisement, at path: DBusObjectPath) -> [DBusInterface] {
        var properties = advertisement.bluezProperties.sorted { $0.key < $1.key }.map { name, value in
            advertisementProperty(name, value, at: path)
        }
        if advertisement.txPower == nil { properties.append(txPowerReport(at: path)) }
        let release = DBusMethod("Release") { [weak self] call in
            await self?.released(path)
            return []
        }
        return [DBusInterface(name: BlueZ.advertisementInterface, methods: [release], properties: properties)]
    }

    /// One of an advertisement's properties as exported: read-only, but for a `TxPower` asked,
    /// which BlueZ sets to the power the controller chose.
    private func advertisementProperty(_ name: String, _ value: DBusValue, at path: DBusObjectPath) -> DBusProperty {
        name == "TxPower" ? DBusProperty(name, value: value, access: .readWrite, onSet: txPowerReported(at: path)) : DBusProperty(name, value: value)
    }

    /// The write-only `TxPower` of an advertisement that asks no power: BlueZ's report is taken
    /// without a read-back (GetAll) turning into a request for that power.
    private func txPowerReport(at path: DBusObjectPath) -> DBusProperty {
        DBusProperty("TxPower", value: .int16(0), access: .write, emitsChanged: false, onSet: txPowerReported(at: path))
    }

    private func txPowerReported(at path: DBusObjectPath) -> DBusProperty.SetHandler {
        let logger = logger
        return { value in
            logger.debug("\(path): BlueZ says the controller transmits at \(value.int16.map(String.init) ?? "?") dBm")
        }
    }
}
