import DBus
import Logging
public import Peripheral

/// GATT services registered with BlueZ: an application is an object manager at
/// `/org/bleadvd/gatt/appN` with one `GattService1` object per service (`…/serviceK`) and one
/// `GattCharacteristic1` per characteristic (`…/serviceK/charJ`), with a `GattDescriptor1` for
/// its user description when it has one (`…/charJ/desc0`), registered on an adapter with
/// `GattManager1.RegisterApplication`. bluetoothd reads them all back (GetManagedObjects) during
/// the call, and from then on calls ReadValue, WriteValue, StartNotify and StopNotify as
/// centrals act; a notification is a `PropertiesChanged` of `Value`.
extension BlueZPeripheralManager: GATTServing {
    /// Exports the application and registers it; returns once BlueZ replied (after reading
    /// every object back). A refused registration leaves no object.
    func registerApplication(_ application: GATTApplication, on adapter: String) async throws -> RegistrationID {
        let adapterPath = try BlueZ.adapterPath(adapter)
        let generation = try await currentBluetoothd()
        nextObject += 1
        let root = try BlueZ.applicationRoot.appending("app\(nextObject)")
        let sockets = await givesSocketsPerCentral(adapter, on: generation)
        let tree = try GATTObjectTree(application, at: root, notifySockets: sockets) {
            characteristicInterface($0, $1, service: $2, at: $3, sockets: sockets)
        }
        registering.insert(root)
        defer { registering.remove(root) }
        do {
            try await tree.export(on: connection, for: generation.name)
        } catch let error as DBusError {
            throw PeripheralError(.invalid, "cannot export the GATT services: \(error.message)")
        }
        do {
            _ = try await callBlueZ(
                on: generation, path: adapterPath, .registerApplication,
                [.objectPath(root), .variantDictionary([:])], expecting: .empty, about: .registration(.application))
        } catch let error as PeripheralError where error.code != .timeout {
            await tree.unexport(from: connection)
            throw error
        } catch {
            // No answer: BlueZ may hold it all the same; it must not keep one nobody tracks.
            await tree.unexport(from: connection)
            _ = try? await callBlueZ(
                on: generation, path: adapterPath, .unregisterApplication,
                [.objectPath(root)], expecting: .empty, about: .registration(.application))
            logger.warning("\(root.rawValue) withdrawn: its registration got no answer (\(error))")
            throw error
        }
        guard bluetoothd == generation else {
            await tree.unexport(from: connection)
            throw PeripheralError(.bluezUnavailable, "bluetoothd \(generation) left the bus while registering the GATT application")
        }
        exports[root] = Export(adapter: adapter, generation: generation, objects: .application(tree))
        return RegistrationID(root.rawValue, generation: generation)
    }

    /// Sets the characteristic's `Value`: the `PropertiesChanged` that says so is what
    /// bluetoothd sends every subscriber as a notification or indication, bonded centrals on
    /// later links included. For `central` alone, the value goes through that central's socket
    /// (+Sockets) and `Value` stays (a notification for one central is not the
    /// characteristic's value); where it has none, it is refused.
    public func updateValue(_ value: [UInt8], of characteristic: GATTCharacteristicID, in application: RegistrationID, to central: String?) async throws {
        guard let root = try? DBusObjectPath(application.rawValue), let export = exports[root],
              export.generation == application.generation,
              let tree = export.application, let path = tree.characteristics[characteristic] else {
            throw PeripheralError(.notRegistered, "\(characteristic) is not registered in \(application)")
        }
        // No central can read a write-only value: it is kept nowhere on the bus.
        guard !tree.secrets.contains(characteristic) else { return }
        if let central {
            guard tree.throughSockets.contains(characteristic) else {
                throw PeripheralError(.rejected, "\(characteristic) cannot be notified to \(central) alone: bluetoothd on \(export.adapter) sends its changes to every subscriber alike (bleadvd takes a socket per central from BlueZ 5.71, for characteristics that notify and do not indicate)")
            }
            try notifyThroughSockets(value, at: path, only: central.uppercased())
            return
        }
        // Set again, a value is notified again: a central may be waiting for it (Improv's
        // client for the error its second malformed frame gets).
        try await store(value, of: characteristic, at: path, secured: tree.securedNotifying.contains(characteristic), always: true)
    }

    // MARK: What BlueZ calls

    /// One characteristic's exported interface: its properties, and the methods through which
    /// bluetoothd passes on what centrals do.
    private nonisolated func characteristicInterface(
        _ characteristic: GATTCharacteristic, _ id: GATTCharacteristicID, service: DBusObjectPath, at path: DBusObjectPath, sockets: Bool
    ) -> DBusInterface {
        let acquired = sockets && characteristic.notifiesThroughSockets
        var methods = [
            DBusMethod("ReadValue", inputs: [GATTObjectTree.optionsArgument], outputs: [GATTObjectTree.valueArgument]) { [weak self] call in
                guard let self else { throw DBusError(.failed, "bleadvd is stopping") }
                let options = call.arguments[0].variantDictionary ?? [:]
                try await self.admit(characteristic, id, central: Self.central(options), to: "read")
                return [.bytes(try await self.read(id, handler: characteristic.onRead, at: path, options: options))]
            },
            DBusMethod("WriteValue", inputs: [GATTObjectTree.valueArgument, GATTObjectTree.optionsArgument]) { [weak self] call in
                guard let self else { throw DBusError(.failed, "bleadvd is stopping") }
                let options = call.arguments[1].variantDictionary ?? [:]
                try await self.admit(characteristic, id, central: Self.central(options), to: "write")
                try await self.write(call.arguments[0].bytes ?? [], to: characteristic, id, at: path, options: options)
                return []
            },
            DBusMethod("StartNotify") { [weak self] _ in
                await self?.notifying(true, id, at: path)
                return []
            },
            DBusMethod("StopNotify") { [weak self] _ in
                await self?.notifying(false, id, at: path)
                return []
            },
        ]
        var properties: [DBusProperty] = []
        if acquired {
            methods.append(DBusMethod(
                "AcquireNotify", inputs: [GATTObjectTree.optionsArgument],
                outputs: [DBusArgument("fd", .unixFD), DBusArgument("mtu", .uint16)]
            ) { [weak self] call in
                // bluetoothd takes org.bluez.Error.Failed as final; another error makes it call StartNotify.
                guard let self else { throw DBusError(BlueZ.failed, "bleadvd is stopping") }
                return try await self.acquireNotify(characteristic, id, at: path, options: call.arguments[0].variantDictionary ?? [:])
            })
            // Its presence is what bluetoothd asks: it calls AcquireNotify rather than StartNotify.
            properties.append(DBusProperty("NotifyAcquired", value: .boolean(false)))
        }
        return DBusInterface(name: BlueZ.characteristicInterface, methods: methods, properties: properties + [
            DBusProperty("UUID", value: .string(characteristic.uuid.uuidString)),
            DBusProperty("Service", value: .objectPath(service)),
            DBusProperty("Flags", value: .strings(BlueZ.flags(of: characteristic))),
            // A change is announced only where bluetoothd notifies it. A write-only value (a
            // password a central wrote) is not kept here at all: it would go out with the
            // object manager's InterfacesAdded, a broadcast, when bluetoothd restarts.
            DBusProperty("Value", value: .bytes(characteristic.isSecret ? [] : characteristic.value),
                         emitsChanged: !characteristic.flags.isDisjoint(with: [.notify, .indicate])),
            DBusProperty("Notifying", value: .boolean(false)),
        ])
    }

    /// Refuses `central` the `action` (a read, a write, its notifications) of a characteristic
    /// whose security is not none when bleadvd does not admit it (``admits``), with `refusal`:
    /// for a read or a write the error bluetoothd answers as ATT's Insufficient Authorization;
    /// for `AcquireNotify` `Failed`, after which bluetoothd asks nothing more (it falls back to
    /// `StartNotify` on any other error). Logged once a central and refusal.
    func admit(
        _ characteristic: GATTCharacteristic, _ id: GATTCharacteristicID, central: String, to action: String,
        refusal: DBusError.Name = BlueZ.notAuthorized
    ) throws {
        guard characteristic.security != .none, !admits(central) else { return }
        if refusalsLogged.count >= Self.maximumLongReads { refusalsLogged.removeAll() }
        if refusalsLogged.insert(refusal == BlueZ.notAuthorized ? central : "\(refusal.rawValue) \(central)").inserted {
            logger.warning("GATT: refused \(Central.named(central)) the \(action) of \(id) (security \(characteristic.security.rawValue)): it did not bond in a bleadvd pairing window (bleadvctl pair --adopt lets an existing bond in)")
        }
        throw DBusError(refusal, "\(id) is served to centrals bonded in a bleadvd pairing window")
    }

    /// One central's long read of one characteristic.
    struct LongRead: Hashable {
        let characteristic: GATTCharacteristicID
        let central: String
    }

    /// The most long reads kept at once: a central that starts one and goes away leaves it.
    static let maximumLongReads = 64

    private func read(_ id: GATTCharacteristicID, handler: GATTReadHandler?, at path: DBusObjectPath, options: [String: DBusValue]) async throws -> [UInt8] {
        let central = Self.central(options)
        let key = LongRead(characteristic: id, central: central)
        // A Read (Blob) Response carries the ATT MTU less 1 byte; 23 is ATT's least MTU.
        let part = max(1, Int(options["mtu"]?.uint16 ?? 23) - 1)
        let offset = Int(options["offset"]?.uint16 ?? 0)
        let value: [UInt8]
        if offset == 0 {
            if let handler {
                do throws(GATTReadError) {
                    value = try await handler.answerer.answer(id, central: central)
                } catch {
                    // bluetoothd answers org.bluez.Error.Failed whose message is no number
                    // with ATT's 0x80, an application error.
                    throw DBusError(BlueZ.failed, "no fresh value: \(error)")
                }
            } else {
                value = await connection.property("Value", of: BlueZ.characteristicInterface, at: path)?.bytes ?? []
            }
            if longReads.count >= Self.maximumLongReads { longReads.removeAll() }
            longReads[key] = value.count > part ? value : nil
        } else {
            if let begun = longReads[key] {
                value = begun
            } else {
                value = await connection.property("Value", of: BlueZ.characteristicInterface, at: path)?.bytes ?? []
            }
            if offset + part >= value.count { longReads[key] = nil }
        }
        let rest = try GATTObjectTree.rest(of: value, options: options)
        publish(.gatt(GATTEvent(id, .read, central: central, mtu: options["mtu"]?.uint16.map(Int.init))))
        return rest
    }

    /// Takes a central's write when the characteristic accepts writes and the bytes fit its
    /// format; otherwise answers with the error bluetoothd turns into the ATT error a central
    /// expects, and nothing changes.
    private func write(
        _ bytes: [UInt8], to characteristic: GATTCharacteristic, _ id: GATTCharacteristicID,
        at path: DBusObjectPath, options: [String: DBusValue]
    ) async throws {
        let central = Self.central(options)
        let value: GATTValue
        do throws(GATTWriteError) {
            guard characteristic.flags.contains(where: \.isWrite) else { throw .notPermitted("\(id) is read-only") }
            let offset = Int(options["offset"]?.uint16 ?? 0)
            guard offset == 0 else { throw .invalidOffset("values are written whole; offset \(offset) refused") }
            value = try characteristic.format.decode(bytes)
        } catch {
            logger.notice("GATT: refused a write of \(bytes.count) byte(s) to \(id) from \(Central.named(central)): \(error.message)")
            throw DBusError(Self.errorName(error), error.message)
        }
        // Centrals read what they may read from here; what they can only write is not kept.
        if !characteristic.isSecret {
            try await store(bytes, of: id, at: path, secured: characteristic.isSecuredNotifying, always: false)
        }
        publish(.gatt(GATTEvent(id, .written(bytes, value), central: central, mtu: options["mtu"]?.uint16.map(Int.init))))
    }

    private func notifying(_ on: Bool, _ id: GATTCharacteristicID, at path: DBusObjectPath) async {
        try? await connection.setProperty("Notifying", of: BlueZ.characteristicInterface, at: path, to: .boolean(on))
        publish(.gatt(GATTEvent(id, on ? .subscribed : .unsubscribed, central: "")))
    }

    /// The error name bluetoothd maps to the ATT error for `error`.
    static func errorName(_ error: GATTWriteError) -> DBusError.Name {
        switch error {
        case .invalidLength: "org.bluez.Error.InvalidValueLength"
        case .invalidOffset: BlueZ.invalidOffset
        case .notPermitted: "org.bluez.Error.NotPermitted"
        case .invalidValue: "org.bluez.Error.Failed"
        }
    }

    /// The central's address from a call's `device` option (`/org/bluez/hci0/dev_AA_BB_…`);
    /// empty when there is none or it is not a device path.
    static func central(_ options: [String: DBusValue]) -> String {
        guard let device = options["device"]?.objectPath?.rawValue.split(separator: "/").last,
              device.hasPrefix("dev_") else { return "" }
        let address = String(device.dropFirst(4).map { $0 == "_" ? ":" : $0 })
        return address.count == 17 && address.allSatisfy { $0.isHexDigit || $0 == ":" } ? address : ""
    }
}
