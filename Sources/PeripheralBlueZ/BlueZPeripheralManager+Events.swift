import DBus
import Logging
public import Peripheral

extension BlueZPeripheralManager {
    /// What BlueZ says on the bus, as `PeripheralEvent`s: bluetoothd leaving and coming back
    /// (`NameOwnerChanged`), adapters that can advertise appearing and going
    /// (`InterfacesAdded`/`InterfacesRemoved` of `LEAdvertisingManager1`), `Powered` changes, and
    /// `Release` of one of our advertisements. All come through one subscription, so they keep
    /// the bus's order. When the bus connection ends, a last `bluezVanished` and the stream ends.
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
                sender: BlueZ.service, interface: BlueZ.propertiesInterface, member: "PropertiesChanged",
                arg0: BlueZ.adapterInterface),
        ]
    }

    private func startMonitoring() async throws {
        let signals = try await connection.signals(matching: Self.rules)
        guard monitor == nil else { return }
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

    /// `Release` was called: when bluetoothd called it, it dropped the advertisement itself.
    /// From anyone else (the bus policy lets root call anything) it is ignored: it would only
    /// make bleadvd forget a registration that BlueZ still has.
    func released(_ path: DBusObjectPath, by sender: String?) async {
        let bluetoothd: String?
        if let followed = await connection.followedOwner(of: BlueZ.service) {
            bluetoothd = followed
        } else {
            bluetoothd = (try? await connection.nameOwner(BlueZ.service)) ?? nil
        }
        guard let sender, sender == bluetoothd else {
            logger.warning("ignored Release of \(path.rawValue) from \(sender ?? "an unknown sender"), which is not bluetoothd")
            return
        }
        guard registrations.removeValue(forKey: path) != nil else { return }
        await connection.unexport(path)
        publish(.released(AdvertisementID(path.rawValue)))
    }

    private func connectionEnded() async {
        guard monitor != nil else { return }
        await forgetRegistrations { _ in true }
        await forgetApplications { _ in true }
        publish(.bluezVanished)
        stopEvents()
    }

    /// BlueZ no longer has these registrations (it restarted, or the adapter went): the objects go.
    private func forgetRegistrations(where filter: (Registration) -> Bool) async {
        for (path, registration) in registrations where filter(registration) {
            registrations[path] = nil
            await connection.unexport(path)
        }
    }

    private func observe(_ message: DBusMessage) async {
        let body = message.body
        switch message.member {
        case "NameOwnerChanged" where body.count == 3:
            let old = body[1].string ?? "", new = body[2].string ?? ""
            if !old.isEmpty {
                await forgetRegistrations { _ in true }
                await forgetApplications { _ in true }
                publish(.bluezVanished)
            }
            if !new.isEmpty { publish(.bluezAppeared) }
        // BlueZ announces an adapter's advertising manager once when it comes and once when it
        // goes. These are the only source of the events: a reply to adapters() that already lists
        // the adapter may be handled before the signal that announced it.
        case "InterfacesAdded" where body.count == 2:
            guard let path = body[0].objectPath, let name = BlueZ.adapterName(of: path),
                  let interfaces = body[1].dictionaryEntries?.compactMap(\.key.string),
                  interfaces.contains(BlueZ.advertisingManagerInterface) else { return }
            publish(.adapterAdded(name))
        case "InterfacesRemoved" where body.count == 2:
            guard let path = body[0].objectPath, let name = BlueZ.adapterName(of: path),
                  let interfaces = body[1].stringArray,
                  interfaces.contains(BlueZ.advertisingManagerInterface) else { return }
            await forgetRegistrations { $0.adapter == name }
            await forgetApplications { $0.adapter == name }
            publish(.adapterRemoved(name))
        case "PropertiesChanged" where body.count >= 2:
            guard let path = message.path, let name = BlueZ.adapterName(of: path),
                  let powered = body[1].variantDictionary?["Powered"]?.boolean else { return }
            publish(.adapterPowered(name, powered))
        default:
            logger.debug("ignored signal \(message.member ?? "?") from \(message.sender ?? "?")")
        }
    }
}
