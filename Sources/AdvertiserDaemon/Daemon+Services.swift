import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import DBus
import Logging
import Peripheral

extension Daemon {
    /// One GATT service as the daemon keeps it.
    struct ServiceEntry: Sendable {
        /// As the file said when it was last read.
        var file: ConfiguredService
        /// In force: the file's, with the values set and written since.
        var live: ConfiguredService
        /// What was last handed to the module; a sender brings it up to ``live``.
        var sent: ConfiguredService
        /// Whether a sender is taking its changes to BlueZ now.
        var sending = false

        init(_ configured: ConfiguredService) {
            file = configured
            live = configured
            sent = configured
        }
    }

    /// The services in force as one application, in name order; nil when there are none.
    var application: GATTApplication? {
        services.isEmpty ? nil : GATTApplication(services: services.keys.sorted().map { services[$0]!.live.service })
    }

    /// Applies `values` to service `name`, each checked against its characteristic's format;
    /// the new values reach BlueZ (and subscribed centrals) at most every ``updateInterval``,
    /// the newest winning. Returns once the values are accepted.
    func changeService(_ name: String, _ values: [String: DBusValue]) throws(PeripheralError) {
        guard let entry = services[name] else { throw PeripheralError.unknownName(name) }
        guard !values.isEmpty else {
            throw PeripheralError(.invalidValue, "no values given; set at least one, e.g. \(entry.live.service.characteristics.first?.name ?? "level")=80")
        }
        var changes: [String: ConfigValue] = [:]
        for (key, value) in values {
            guard key.count <= 64 else { throw PeripheralError(.invalidValue, "\(PeripheralError.quoted(key)) is no characteristic of \(name)") }
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
        services[name]?.live = changed
        logger.info("\(name): set \(changes.keys.sorted().map { "\($0)=\(Untrusted.shown(changed.values[$0]?.description ?? "", limit: 64))" }.joined(separator: " "))")
        guard !entry.sending else { return }
        services[name]?.sending = true
        post.yield(.send(name))
    }

    /// Hands the newest values of service `name` to the module, then waits ``updateInterval``
    /// before the next, until none is waiting. Runs as a child of the loop's task group.
    func sendService(_ name: String) async {
        defer { services[name]?.sending = false }
        while let entry = services[name], entry.live != entry.sent {
            services[name]?.sent = entry.live
            for characteristic in entry.live.service.characteristics {
                let before = entry.sent.service.characteristics.first { $0.name == characteristic.name }
                guard before?.value != characteristic.value else { continue }
                try? await module.setValue(characteristic.value, of: GATTCharacteristicID(service: name, characteristic: characteristic.name))
            }
            await ControlService.valuesChanged(name, entry.live.shownValues, on: connection)
            guard (try? await clock.sleep(for: Self.updateInterval)) != nil else { return }
        }
    }

    /// What a connected central did: a write becomes the value in force and a `Written`
    /// signal, so a script can act on it.
    func centralDid(_ event: GATTEvent) async {
        let id = event.characteristic
        let who = event.central.isEmpty ? "a central" : event.central
        switch event.kind {
        case .written(let bytes):
            guard var entry = services[id.service],
                  let format = entry.live.service.characteristics.first(where: { $0.name == id.characteristic })?.format,
                  let value = try? format.decode(bytes) else { return }
            // What BlueZ holds now, in force and as sent: no sender takes it there, and a set
            // of another characteristic still on its way goes on.
            entry.live.store(value, bytes: bytes, for: id.characteristic)
            entry.sent.store(value, bytes: bytes, for: id.characteristic)
            services[id.service] = entry
            let shown = if case .text(let text) = value { Untrusted.quoted(text, limit: 64) } else { value.description }
            logger.notice("\(id): \(who) wrote \(shown)")
            await ControlService.written(id.service, id.characteristic, value, central: event.central, on: connection)
        case .subscribed:
            logger.info("\(id): a central subscribed")
        case .unsubscribed:
            logger.info("\(id): the last central unsubscribed")
        case .read:
            logger.debug("\(id): \(who) read it")
        }
    }

    /// The control API's view of the services: each is where the application is.
    func serviceStates() async -> [String: AdvertisementState] {
        guard let status = await module.applicationStatus().status else { return [:] }
        let state = state(status)
        return services.mapValues { entry in
            var service = state
            service.values = entry.live.shownValues
            return service
        }
    }

    /// The services a reload leaves: one the file did not change keeps the values set and
    /// written since; one it changed starts from the file.
    func reloadServices(_ new: [String: ConfiguredService]) async {
        var next: [String: ServiceEntry] = [:]
        for (name, configured) in new {
            if var entry = services[name], entry.file == configured {
                // What the module is given below: the live values.
                entry.sent = entry.live
                next[name] = entry
            } else {
                var entry = ServiceEntry(configured)
                entry.sending = services[name]?.sending ?? false
                next[name] = entry
            }
        }
        services = next
        await module.serve(application)
    }
}
