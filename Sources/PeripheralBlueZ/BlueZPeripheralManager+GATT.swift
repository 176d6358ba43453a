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
extension BlueZPeripheralManager {
    /// A registered application: which adapter has it, where each characteristic is exported.
    struct ApplicationRegistration {
        var adapter: String
        var generation: StackGeneration
        var characteristics: [GATTCharacteristicID: DBusObjectPath]
        /// Every exported object, services before their characteristics.
        var objects: [DBusObjectPath]
    }

    /// Where applications are exported.
    static let applicationRoot: DBusObjectPath = "/org/bleadvd/gatt"
    static let gattManagerInterface = "org.bluez.GattManager1"
    package static let serviceInterface = "org.bluez.GattService1"
    package static let characteristicInterface = "org.bluez.GattCharacteristic1"
    package static let descriptorInterface = "org.bluez.GattDescriptor1"

    /// Exports the application and registers it; returns once BlueZ replied (after reading
    /// every object back). A refused registration leaves no object.
    public func registerApplication(_ application: GATTApplication, on adapter: String) async throws -> RegistrationID {
        let adapterPath = try BlueZ.adapterPath(adapter)
        let generation = try await currentBluetoothd()
        nextObject += 1
        let root = try Self.applicationRoot.appending("app\(nextObject)")
        var registration = ApplicationRegistration(adapter: adapter, generation: generation, characteristics: [:], objects: [])
        registering.insert(root)
        defer { registering.remove(root) }
        do {
            await connection.exportObjectManager(at: root)
            for (s, service) in application.services.enumerated() {
                let servicePath = try root.appending("service\(s)")
                try await connection.export([Self.serviceInterface(service)], at: servicePath)
                registration.objects.append(servicePath)
                for (c, characteristic) in service.characteristics.enumerated() {
                    let path = try servicePath.appending("char\(c)")
                    let id = GATTCharacteristicID(service: service.name, characteristic: characteristic.name)
                    try await connection.export(
                        [characteristicInterface(characteristic, id: id, service: servicePath, at: path)], at: path)
                    registration.objects.append(path)
                    registration.characteristics[id] = path
                    if let text = characteristic.userDescription {
                        let descriptor = try path.appending("desc0")
                        try await connection.export([Self.userDescriptionInterface(text, of: path)], at: descriptor)
                        registration.objects.append(descriptor)
                    }
                }
            }
        } catch let error as DBusError {
            await unexport(root, registration)
            throw PeripheralError(.invalidAdvertisement, "cannot export the GATT services: \(error.message)")
        }
        do {
            _ = try await callBlueZ(
                on: generation, path: adapterPath, interface: Self.gattManagerInterface, member: "RegisterApplication",
                [.objectPath(root), .variantDictionary([:])], expecting: .empty, about: .application)
        } catch let error as PeripheralError where error.code != .timeout {
            await unexport(root, registration)
            throw error
        } catch {
            // No answer: BlueZ may hold it all the same; it must not keep one nobody tracks.
            await unexport(root, registration)
            _ = try? await callBlueZ(
                on: generation, path: adapterPath, interface: Self.gattManagerInterface, member: "UnregisterApplication",
                [.objectPath(root)], expecting: .empty, about: .application)
            logger.warning("\(root.rawValue) withdrawn: its registration got no answer (\(error))")
            throw error
        }
        guard bluetoothd == generation else {
            await unexport(root, registration)
            throw PeripheralError(.bluezUnavailable, "bluetoothd \(generation) left the bus while registering the GATT application")
        }
        applications[root] = registration
        return RegistrationID(root.rawValue, generation: generation)
    }

    /// Unregisters the application and removes its objects. One BlueZ no longer has counts as
    /// unregistered.
    public func unregisterApplication(_ id: RegistrationID) async throws {
        guard let root = try? DBusObjectPath(id.rawValue), applications[root]?.generation == id.generation,
              let registration = applications.removeValue(forKey: root) else {
            throw PeripheralError(.notRegistered, "\(id) is not registered")
        }
        do {
            _ = try await callBlueZ(
                on: registration.generation, path: try BlueZ.adapterPath(registration.adapter), interface: Self.gattManagerInterface,
                member: "UnregisterApplication", [.objectPath(root)], expecting: .empty, about: .application)
        } catch let error as PeripheralError where error.code == .notRegistered || error.code == .bluezUnavailable || error.code == .noAdapter {
            logger.debug("\(root) was no longer registered: \(error.message)")
        } catch {
            await unexport(root, registration)
            throw error
        }
        await unexport(root, registration)
    }

    /// Sets the characteristic's `Value`; the `PropertiesChanged` that says so is what
    /// bluetoothd sends subscribed centrals as a notification or indication.
    public func updateValue(_ value: [UInt8], of characteristic: GATTCharacteristicID, in application: RegistrationID) async throws {
        guard let root = try? DBusObjectPath(application.rawValue), applications[root]?.generation == application.generation,
              let path = applications[root]?.characteristics[characteristic] else {
            throw PeripheralError(.notRegistered, "\(characteristic) is not registered in \(application)")
        }
        try await connection.setProperty("Value", of: Self.characteristicInterface, at: path, to: .bytes(value))
    }

    /// BlueZ no longer has these applications (it restarted, or the adapter went): the objects go.
    func forgetApplications(where filter: (ApplicationRegistration) -> Bool) async {
        for (root, registration) in applications where filter(registration) {
            applications[root] = nil
            await unexport(root, registration)
        }
    }

    private func unexport(_ root: DBusObjectPath, _ registration: ApplicationRegistration) async {
        for path in registration.objects.reversed() { await connection.unexport(path) }
        await connection.unexport(root)
    }

    // MARK: The exported objects

    static func serviceInterface(_ service: GATTService) -> DBusInterface {
        DBusInterface(name: serviceInterface, properties: [
            DBusProperty("UUID", value: .string(service.uuid.uuidString)),
            DBusProperty("Primary", value: .boolean(service.primary)),
        ])
    }

    /// A Characteristic User Description (0x2901): read-only text, answered from `Value`.
    static func userDescriptionInterface(_ text: String, of characteristic: DBusObjectPath) -> DBusInterface {
        let value = Array(text.utf8)
        let read = DBusMethod("ReadValue", inputs: [optionsArgument], outputs: [valueArgument]) { call in
            [.bytes(try rest(of: value, options: call.arguments[0].variantDictionary ?? [:]))]
        }
        return DBusInterface(name: descriptorInterface, methods: [read], properties: [
            DBusProperty("UUID", value: .string(GATTCharacteristic.userDescriptionUUID.uuidString)),
            DBusProperty("Characteristic", value: .objectPath(characteristic)),
            DBusProperty("Flags", value: .strings(["read"])),
            DBusProperty("Value", value: .bytes(value)),
        ])
    }

    private func characteristicInterface(
        _ characteristic: GATTCharacteristic, id: GATTCharacteristicID, service: DBusObjectPath, at path: DBusObjectPath
    ) -> DBusInterface {
        let methods = [
            DBusMethod("ReadValue", inputs: [Self.optionsArgument], outputs: [Self.valueArgument]) { [weak self] call in
                guard let self else { throw DBusError(.failed, "bleadvd is stopping") }
                return [.bytes(try await self.read(id, at: path, options: call.arguments[0].variantDictionary ?? [:]))]
            },
            DBusMethod("WriteValue", inputs: [Self.valueArgument, Self.optionsArgument]) { [weak self] call in
                guard let self else { throw DBusError(.failed, "bleadvd is stopping") }
                try await self.write(
                    call.arguments[0].bytes ?? [], to: id, format: characteristic.format, flags: characteristic.flags,
                    at: path, options: call.arguments[1].variantDictionary ?? [:])
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
        return DBusInterface(name: Self.characteristicInterface, methods: methods, properties: [
            DBusProperty("UUID", value: .string(characteristic.uuid.uuidString)),
            DBusProperty("Service", value: .objectPath(service)),
            DBusProperty("Flags", value: .strings(characteristic.flags.sorted().map(\.rawValue))),
            DBusProperty("Value", value: .bytes(characteristic.value)),
            DBusProperty("Notifying", value: .boolean(false)),
        ])
    }

    private func read(_ id: GATTCharacteristicID, at path: DBusObjectPath, options: [String: DBusValue]) async throws -> [UInt8] {
        let value = await connection.property("Value", of: Self.characteristicInterface, at: path)?.bytes ?? []
        let rest = try Self.rest(of: value, options: options)
        publish(.gatt(GATTEvent(id, .read, central: Self.central(options))))
        return rest
    }

    /// The arguments of ReadValue and WriteValue.
    static let optionsArgument = DBusArgument("options", .dictionary(key: .string, value: .variant))
    static let valueArgument = DBusArgument("value", .array(.byte))

    /// What a read returns: `value` from the call's `offset` option on (a long read asks for the
    /// rest); InvalidOffset past its end.
    static func rest(of value: [UInt8], options: [String: DBusValue]) throws(DBusError) -> [UInt8] {
        let offset = Int(options["offset"]?.uint16 ?? 0)
        guard offset <= value.count else {
            throw DBusError(invalidOffset, "offset \(offset) is past the value's \(value.count) bytes")
        }
        return Array(value[offset...])
    }

    /// Takes a central's write when the characteristic accepts writes and the bytes fit its
    /// format; otherwise answers with the error bluetoothd turns into the ATT error a central
    /// expects, and nothing changes.
    private func write(
        _ bytes: [UInt8], to id: GATTCharacteristicID, format: GATTFormat, flags: Set<GATTFlag>,
        at path: DBusObjectPath, options: [String: DBusValue]
    ) async throws {
        let central = Self.central(options)
        do throws(GATTWriteError) {
            guard flags.contains(where: \.isWrite) else { throw .notPermitted("\(id) is read-only") }
            let offset = Int(options["offset"]?.uint16 ?? 0)
            guard offset == 0 else { throw .invalidOffset("values are written whole; offset \(offset) refused") }
            _ = try format.decode(bytes)
        } catch {
            logger.notice("GATT: refused a write of \(bytes.count) byte(s) to \(id) from \(central.isEmpty ? "a central" : central): \(error.message)")
            throw DBusError(Self.errorName(error), error.message)
        }
        try await connection.setProperty("Value", of: Self.characteristicInterface, at: path, to: .bytes(bytes))
        publish(.gatt(GATTEvent(id, .written(bytes), central: central)))
    }

    private func notifying(_ on: Bool, _ id: GATTCharacteristicID, at path: DBusObjectPath) async {
        try? await connection.setProperty("Notifying", of: Self.characteristicInterface, at: path, to: .boolean(on))
        publish(.gatt(GATTEvent(id, on ? .subscribed : .unsubscribed, central: "")))
    }

    static let invalidOffset: DBusError.Name = "org.bluez.Error.InvalidOffset"

    /// The error name bluetoothd maps to the ATT error for `error`.
    static func errorName(_ error: GATTWriteError) -> DBusError.Name {
        switch error {
        case .invalidLength: "org.bluez.Error.InvalidValueLength"
        case .invalidOffset: invalidOffset
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
