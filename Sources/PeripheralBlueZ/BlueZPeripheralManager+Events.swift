import DBus
import Logging
public import Peripheral

extension BlueZPeripheralManager {
    /// What BlueZ says on the bus, as `PeripheralEvent`s: bluetoothd leaving and coming back
    /// (`NameOwnerChanged`), adapters that can advertise appearing and going
    /// (`InterfacesAdded`/`InterfacesRemoved` of `LEAdvertisingManager1`), `Powered` changes,
    /// a central's `Paired` turning true and its `Connected` changing, a bond's end (a device
    /// removed while its adapter stays, its `Paired` or `Bonded` turning false), and `Release`
    /// of one of our advertisements. All come through one subscription, so they keep
    /// the bus's order, and each names the bluetoothd it came from: the owner changes here, in
    /// that order, and calls go to the owner announced last. When the bus connection ends, a
    /// last `bluezVanished` and the stream ends.
    /// - Throws: `DBusError` when the bus refuses a subscription (e.g. its policy); then
    ///   there is no stream.
    public func events() async throws -> AsyncStream<PeripheralEvent> {
        if monitor == nil { try await startMonitoring() }
        let (stream, continuation) = AsyncStream<PeripheralEvent>.makeStream()
        let id = nextConsumer
        nextConsumer += 1
        consumers[id] = continuation
        continuation.onTermination = { [weak self, eventLoop = connection.eventLoop] _ in
            Task(executorPreference: eventLoop) { await self?.removeConsumer(id) }
        }
        return stream
    }

    /// Stops watching the bus and ends every event stream.
    public func stopEvents() {
        monitor?.cancel()
        monitor = nil
        removals?.finish()
        removals = nil
        bondChecks?.cancel()
        bondChecks = nil
        for consumer in consumers.values { consumer.finish() }
        consumers = [:]
    }

    static var rules: [DBusMatchRule] {
        [
            DBusMatchRule(
                sender: DBusConnection.busName, path: "/org/freedesktop/DBus", interface: DBusConnection.busName,
                member: "NameOwnerChanged", arg0: BlueZ.service),
            DBusMatchRule(sender: BlueZ.service, interface: BlueZ.objectManagerInterface, member: "InterfacesAdded"),
            DBusMatchRule(sender: BlueZ.service, interface: BlueZ.objectManagerInterface, member: "InterfacesRemoved"),
            DBusMatchRule(
                sender: BlueZ.service, interface: DBusProperties.interface, member: DBusProperties.changed,
                arg0: BlueZ.adapterInterface),
            DBusMatchRule(
                sender: BlueZ.service, interface: DBusProperties.interface, member: DBusProperties.changed,
                arg0: BlueZ.deviceInterface),
        ]
    }

    func startMonitoring() async throws {
        let signals = try await connection.signals(matching: Self.rules)
        // The owner as of the subscription; a change after it is in the stream and is handled
        // in its turn (by name, so one already seen here changes nothing).
        let owner = await connection.followedOwner(of: BlueZ.service)
        guard monitor == nil else { return }
        if let owner { appeared(owner) }
        let (pending, removals) = AsyncStream<DeviceRemoval>.makeStream()
        self.removals = removals
        bondChecks = Task(executorPreference: connection.eventLoop) { [weak self] in
            for await removal in pending {
                await self?.check(removal)
            }
        }
        monitor = Task(executorPreference: connection.eventLoop) { [weak self] in
            for await message in signals {
                await self?.observe(message)
            }
            await self?.connectionEnded()
        }
    }

    private func removeConsumer(_ id: Int) {
        consumers[id] = nil
    }

    func publish(_ event: PeripheralEvent) {
        logger.debug("event \(event)")
        for consumer in consumers.values { consumer.yield(event) }
    }

    /// `Release` was called by the bluetoothd that holds the advertisement (the object answers
    /// no one else): it dropped the advertisement itself.
    func released(_ path: DBusObjectPath) async {
        guard let registration = exports[path], registration.advertisement != nil else { return }
        exports[path] = nil
        await connection.unexport(path)
        publish(.released(RegistrationID(path.rawValue, generation: registration.generation)))
    }

    private func connectionEnded() async {
        guard monitor != nil else { return }
        if let bluetoothd { await vanished(bluetoothd) }
        stopEvents()
    }

    /// A new owner of `org.bluez`: calls go to it from now on.
    private func appeared(_ owner: String) {
        ownersSeen += 1
        let generation = StackGeneration(ownersSeen, name: owner)
        bluetoothd = generation
        logger.debug("bluetoothd \(generation) owns org.bluez")
        publish(.bluezAppeared(generation))
    }

    /// That bluetoothd left the bus: what it held is gone, and nothing else.
    private func vanished(_ generation: StackGeneration) async {
        if bluetoothd == generation { bluetoothd = nil }
        await forget { $0.generation == generation }
        await linksEnded(on: nil)
        publish(.bluezVanished(generation))
    }

    /// BlueZ no longer has these registrations, advertisements and applications alike (it
    /// restarted, or the adapter went): their objects go.
    private func forget(where filter: (Export) -> Bool) async {
        for (root, export) in exports where filter(export) {
            exports[root] = nil
            endSockets(under: root)
            await export.unexport(root, from: connection)
        }
    }

    /// Whether the removal of a device object ended a bond, answered off the monitor (signals
    /// after it are handled meanwhile) and published as `bondEnded` (`removed`) when it did.
    ///
    /// It did when the device's adapter stays: bluetoothd removes every device object of an
    /// adapter that goes (unplugged; src/adapter.c, adapter_remove) and keeps their bonds, and
    /// in the same turn its advertising manager, which `GetManagedObjects` then no longer lists.
    /// Asked only about a central the manager admits (``admits``): the others' objects come and
    /// go with every scan, and each answer lists them all.
    ///
    /// No answer fails closed, but for a bluetoothd that left: the bus is asked who owns
    /// `org.bluez`. The bluetoothd that removed the device, still the owner, did not answer about
    /// it: the bond is taken as ended. Another owner or none: it stopped, crashed or restarted
    /// (`systemctl restart bluetooth` removes the device objects on its way out and keeps the
    /// bonds), which ends no bond.
    func check(_ removal: DeviceRemoval) async {
        let (central, adapter, generation) = (removal.central, removal.adapter, removal.generation)
        guard let adapterPath = try? BlueZ.adapterPath(adapter) else { return }
        do {
            let reply = try await callBlueZ(
                on: generation, path: BlueZ.root, .getManagedObjects, expecting: BlueZ.managedObjectsSignature, about: .registration(.agent))
            let stays = (reply[0].dictionaryEntries ?? []).contains { entry in
                entry.key.objectPath == adapterPath
                    && entry.value.dictionaryEntries?.contains { $0.key.string == BlueZ.advertisingManagerInterface } == true
            }
            guard stays else { return }
        } catch {
            let owner: String?
            do {
                owner = try await connection.nameOwner(BlueZ.service)
            } catch let busError {
                // The bus did not say either (the connection is ending): fail closed.
                logger.notice("\(central)'s device went from \(adapter), and neither bluetoothd (\(error)) nor the bus (\(busError)) answered the check: its bond is taken as ended")
                publish(.bondEnded(central: central, adapter: adapter, .removed))
                return
            }
            guard owner == generation.name else {
                logger.debug("\(central)'s device went from \(adapter) as bluetoothd \(generation) left the bus (\(error)): no bond ended")
                return
            }
            logger.notice("\(central)'s device went from \(adapter), and bluetoothd \(generation), still running, gave no answer to the check (\(error)): its bond is taken as ended")
        }
        publish(.bondEnded(central: central, adapter: adapter, .removed))
    }

    private func observe(_ message: DBusMessage) async {
        let body = message.body
        switch message.member {
        case "NameOwnerChanged" where body.count == 3:
            let old = body[1].string ?? "", new = body[2].string ?? ""
            if let current = bluetoothd, current.name == old { await vanished(current) }
            if !new.isEmpty, bluetoothd?.name != new { appeared(new) }
        // Every other signal is of the bluetoothd that sent it; one from a bluetoothd that is no
        // longer the owner (sent before it left) concerns nothing held now.
        case _ where bluetoothd == nil || message.sender != bluetoothd?.name:
            logger.debug("ignored \(message.member ?? "a signal") from \(message.sender ?? "?"), which is not the current bluetoothd")
        // A device that appears connected: BlueZ (5.66, 5.82) makes the object of a central it
        // never saw when the central connects, with Connected already true and no
        // PropertiesChanged after.
        case "InterfacesAdded" where body.count == 2 && body[0].objectPath.flatMap(BlueZ.device(at:)) != nil:
            guard let device = body[0].objectPath.flatMap(BlueZ.device(at:)),
                  let properties = body[1].dictionaryEntries?.first(where: { $0.key.string == BlueZ.deviceInterface })?.value.variantDictionary,
                  properties["Connected"]?.boolean == true else { return }
            linked(device.address, on: device.adapter, bonded: properties["Paired"]?.boolean)
            publish(.connected(central: device.address, adapter: device.adapter))
        // BlueZ announces an adapter's advertising manager once when it comes and once when it
        // goes. These are the only source of the events: a reply to adapters() that already lists
        // the adapter may be handled before the signal that announced it.
        case "InterfacesAdded" where body.count == 2:
            guard let path = body[0].objectPath, let name = BlueZ.adapterName(of: path),
                  let interfaces = body[1].dictionaryEntries?.compactMap(\.key.string),
                  interfaces.contains(BlueZ.advertisingManagerInterface) else { return }
            publish(.adapterAdded(name, bluetoothd!))
        // A device removed: a bond's end when its adapter stays (RemoveDevice, by anyone),
        // which ``check(_:)`` asks bluetoothd off this loop, for a central the manager admits.
        case "InterfacesRemoved" where body.count == 2 && body[0].objectPath.flatMap(BlueZ.device(at:)) != nil:
            guard let device = body[0].objectPath.flatMap(BlueZ.device(at:)),
                  body[1].stringArray?.contains(BlueZ.deviceInterface) == true, admits(device.address) else { return }
            removals?.yield(DeviceRemoval(central: device.address, adapter: device.adapter, generation: bluetoothd!))
        case "InterfacesRemoved" where body.count == 2:
            guard let path = body[0].objectPath, let name = BlueZ.adapterName(of: path),
                  let interfaces = body[1].stringArray,
                  interfaces.contains(BlueZ.advertisingManagerInterface) else { return }
            let generation = bluetoothd!
            await forget { $0.adapter == name && $0.generation == generation }
            await linksEnded(on: name)
            publish(.adapterRemoved(name, generation))
        case DBusProperties.changed where body.count >= 2 && body[0].string == BlueZ.deviceInterface:
            // A central that finished pairing (its Paired turns true) or was unpaired (Paired or
            // Bonded turns false: btmgmt unpair, say), whose link came up or ended (Connected
            // turns true or false).
            guard let path = message.path, let device = BlueZ.device(at: path), let changed = body[1].variantDictionary else { return }
            let paired = changed["Paired"]?.boolean
            if paired == true {
                if links[device.adapter]?[device.address] != nil { linked(device.address, on: device.adapter, bonded: true) }
                publish(.paired(central: device.address, adapter: device.adapter))
            }
            if paired == false || changed["Bonded"]?.boolean == false {
                publish(.bondEnded(central: device.address, adapter: device.adapter, .unpaired))
            }
            switch changed["Connected"]?.boolean {
            case true?:
                linked(device.address, on: device.adapter, bonded: paired)
                publish(.connected(central: device.address, adapter: device.adapter))
            case false?:
                await unlinked(device.address, on: device.adapter)
                publish(.disconnected(central: device.address, adapter: device.adapter))
            case nil: break
            }
        case DBusProperties.changed where body.count >= 2:
            guard let path = message.path, let name = BlueZ.adapterName(of: path), let changed = body[1].variantDictionary else { return }
            if let powered = changed["Powered"]?.boolean {
                if !powered { await linksEnded(on: name) }
                publish(.adapterPowered(name, powered, bluetoothd!))
            }
            if let pairable = changed["Pairable"]?.boolean { publish(.pairable(adapter: name, pairable)) }
        default:
            logger.debug("ignored signal \(message.member ?? "?") from \(message.sender ?? "?")")
        }
    }
}

/// A device object a bluetoothd removed, waiting for ``BlueZPeripheralManager/check(_:)``.
struct DeviceRemoval: Sendable {
    /// The central's address.
    let central: String
    /// The adapter the device was under.
    let adapter: String
    /// The bluetoothd that removed it.
    let generation: StackGeneration
}
