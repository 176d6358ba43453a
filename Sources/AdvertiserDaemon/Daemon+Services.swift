import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import DBus
import Logging
import Peripheral

extension Daemon {
    /// The services in force as one application, in name order (Improv's only while it is
    /// offered); nil when there are none.
    var application: GATTApplication? {
        let names = services.keys.sorted().filter(isOffered)
        return names.isEmpty ? nil : GATTApplication(services: names.map { services[$0]!.live.service })
    }

    /// Whether what `name` configures may be on air: all but Improv's while it is withheld.
    func isOffered(_ name: String) -> Bool {
        name != ImprovConfig.name || improvOffered
    }

    /// The service's part of ``change(_:_:)``: returns whether a sender must start.
    func changeService(_ name: String, _ values: [String: DBusValue]) throws(PeripheralError) -> Bool {
        let entry = services[name]!
        var changes: [String: ConfigValue] = [:]
        for (key, value) in values {
            // Text is read as the characteristic's format says (bleadvctl sends text as typed).
            if case .string(let text) = value {
                changes[key] = .string(text)
            } else {
                changes[key] = try Self.configValue(value, key: key, like: nil)
            }
        }
        let changed: ConfiguredService
        do {
            changed = try entry.live.applying(changes, name: name)
        } catch {
            throw PeripheralError(.invalidValue, error.description)
        }
        let shown = changes.keys.sorted().map { key in
            entry.live.isSecret(key) ? "\(key)=(secret)" : "\(key)=\(Untrusted.shown(changed.values[key]?.description ?? "", limit: 64))"
        }
        logger.info("\(name): set \(shown.joined(separator: " "))")
        return services[name]!.set(changed)
    }

    /// Writes to one characteristic taken while its last announcement is less than
    /// ``updateInterval`` old.
    struct WriteBurst: Sendable {
        /// The newest of them.
        var newest: GATTEvent
        /// How many.
        var count = 0
    }

    /// What a connected central did: a write becomes the value in force at once, and is
    /// announced (a `Written` signal, so a script can act on it, and a journal line) at most
    /// once per ``updateInterval`` per characteristic: a central writing 1,000 times a second
    /// costs ten signals and ten lines, each with the newest value and how many it stands for.
    func centralDid(_ event: GATTEvent) async {
        let id = event.characteristic
        switch event.kind {
        case .written(let bytes, let value):
            guard services[id.service]?.live.service.characteristics.contains(where: { $0.name == id.characteristic }) == true else { return }
            if id == Self.improvCommand {
                await improv.written(bytes, central: event.central)
                return
            }
            // What BlueZ holds now, in force and as sent: no sender takes it there, and a set
            // of another characteristic still on its way goes on.
            services[id.service]?.held { $0.store(value, bytes: bytes, for: id.characteristic) }
            if writeWindows[id] != nil {
                writeWindows[id]!.newest = event
                writeWindows[id]!.count += 1
                return
            }
            writeWindows[id] = WriteBurst(newest: event)
            post.yield(.writeWindow(id))
            await announce(event, of: 1)
        case .subscribed:
            logger.info("\(id): a central subscribed")
        case .unsubscribed:
            logger.info("\(id): the last central unsubscribed")
        case .read:
            logger.debug("\(id): \(Central.named(event.central)) read it")
        }
    }

    /// Ends the announcement interval of `id`'s writes: announces the newest write taken
    /// during it, if any, and starts another interval; else closes. Runs as a child of the
    /// loop's task group.
    func closeWindow(_ id: GATTCharacteristicID) async {
        while (try? await clock.sleep(for: Self.updateInterval)) != nil, let burst = writeWindows[id], burst.count > 0 {
            writeWindows[id]!.count = 0
            await announce(burst.newest, of: burst.count)
        }
        writeWindows[id] = nil
    }

    /// The journal line and the `Written` signal for a write, the newest of `count`.
    private func announce(_ event: GATTEvent, of count: Int) async {
        let id = event.characteristic
        // A reload may have taken the characteristic away meanwhile: whether it held secrets
        // is then unknown, and nothing is announced.
        guard case .written(let bytes, let value) = event.kind,
              let service = services[id.service]?.live, service.values[id.characteristic] != nil else { return }
        // A write-only value is a secret: the log and the signal say that it was written, by
        // whom and how long it is, never what it is.
        let secret = service.isSecret(id.characteristic)
        let shown = if secret { "a secret (\(bytes.count) bytes, not shown)" }
            else if case .text(let text) = value { Untrusted.quoted(text, limit: 64) } else { value.description }
        let who = Central.named(event.central)
        logger.notice("\(id): \(who) wrote \(shown)\(count > 1 ? " (the newest of \(count) writes in \(Self.updateInterval))" : "")")
        await announceWrite(id, secret ? nil : value, secured: service.isSecured(id.characteristic), central: event.central)
    }

    /// The control API's view of the services: each is where the application is.
    func serviceStates() async -> [String: AdvertisementState] {
        guard let status = await module.applicationStatus().status else { return [:] }
        var state = state(status)
        state.kind = .service
        return services.mapValues { entry in
            var service = state
            service.values = entry.live.shownValues
            return service
        }
    }

    /// The services a reload leaves: one the file did not change keeps the values set and
    /// written since; one it changed starts from the file.
    func reloadServices(_ new: [String: ConfiguredService]) async {
        services = new.reduce(into: [:]) { next, entry in
            next[entry.key] = services[entry.key]?.reloaded(from: entry.value) ?? Coalesced(entry.value)
        }
        await module.serve(application)
    }
}
