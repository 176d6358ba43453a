import DBus
import Peripheral

/// Something this manager exported for BlueZ and registered with one bluetoothd: an
/// advertisement's object, or a GATT application's object tree. One table holds them all
/// (`BlueZPeripheralManager.exports`, by root path), and one place forgets them.
struct Export {
    /// What the objects hold, by kind of registration (``RegistrationSubject/Kind``).
    enum Objects {
        /// One `LEAdvertisement1` object at the root, with the advertisement last set on it.
        case advertisement(Advertisement)
        /// A GATT application's objects under the root.
        case application(GATTObjectTree)
        /// The pairing agent (one object), registered with bluetoothd rather than an adapter.
        case agent(PairingMethod)
    }

    /// The adapter it is registered on; empty for the agent, which bluetoothd holds for all.
    var adapter: String
    /// The bluetoothd that holds it.
    var generation: StackGeneration
    var objects: Objects

    /// The kind of registration it is.
    var kind: RegistrationSubject.Kind {
        switch objects {
        case .advertisement: .advertisement
        case .application: .application
        case .agent: .agent
        }
    }

    /// The advertisement, if it is one.
    var advertisement: Advertisement? {
        if case .advertisement(let advertisement) = objects { advertisement } else { nil }
    }

    /// The application's objects, if it is one.
    var application: GATTObjectTree? {
        if case .application(let tree) = objects { tree } else { nil }
    }

    /// The agent's method, if it is the agent.
    var agent: PairingMethod? {
        if case .agent(let method) = objects { method } else { nil }
    }

    /// How BlueZ unregisters it: the object whose manager holds it (its adapter; the agent
    /// manager for the agent), the method, and what the method's errors are about.
    func unregistration() throws -> (path: DBusObjectPath, method: BlueZ.Method, about: BlueZSubject) {
        let (path, method): (DBusObjectPath, BlueZ.Method) = switch kind {
        case .advertisement: (try BlueZ.adapterPath(adapter), .unregisterAdvertisement)
        case .application: (try BlueZ.adapterPath(adapter), .unregisterApplication)
        case .agent: (BlueZ.agentManagerPath, .unregisterAgent)
        }
        return (path, method, .registration(kind))
    }

    /// Removes its objects from the bus, in the reverse of the order they were exported.
    func unexport(_ root: DBusObjectPath, from connection: DBusConnection) async {
        if let application { await application.unexport(from: connection) } else { await connection.unexport(root) }
    }
}

/// A GATT application's object tree as a value: an object manager at the root, then each
/// service before its characteristics and each characteristic before its descriptor. It
/// exports itself in that order and tears itself down in the reverse one.
struct GATTObjectTree {
    /// The application's root, e.g. `/org/bleadvd/gatt/app1`.
    let root: DBusObjectPath
    /// Every object under the root, in export order.
    let objects: [(path: DBusObjectPath, interfaces: [DBusInterface])]
    /// Where each characteristic is.
    let characteristics: [GATTCharacteristicID: DBusObjectPath]
    /// The write-only characteristics, whose values are secrets kept nowhere on the bus.
    let secrets: Set<GATTCharacteristicID>
    /// The secured characteristics that notify or indicate, whose changes may have to wait.
    let securedNotifying: Set<GATTCharacteristicID>
    /// The characteristics that take a socket per central (+Sockets): for one central's values.
    let throughSockets: Set<GATTCharacteristicID>

    /// The tree of `application` at `root`: `…/serviceK`, `…/serviceK/charJ`, `…/charJ/desc0`.
    /// - Parameters:
    ///   - notifySockets: whether bluetoothd gives each central a socket of its own.
    ///   - characteristic: the exported interface of one characteristic (its id, the
    ///     service's path, its own path), where the manager answers BlueZ's calls.
    init(
        _ application: GATTApplication, at root: DBusObjectPath, notifySockets: Bool,
        characteristic: (GATTCharacteristic, GATTCharacteristicID, DBusObjectPath, DBusObjectPath) -> DBusInterface
    ) throws {
        var objects: [(path: DBusObjectPath, interfaces: [DBusInterface])] = []
        var characteristics: [GATTCharacteristicID: DBusObjectPath] = [:]
        var secrets: Set<GATTCharacteristicID> = []
        var securedNotifying: Set<GATTCharacteristicID> = []
        var throughSockets: Set<GATTCharacteristicID> = []
        for (s, service) in application.services.enumerated() {
            let servicePath = try root.appending("service\(s)")
            objects.append((servicePath, [Self.serviceInterface(service)]))
            for (c, item) in service.characteristics.enumerated() {
                let path = try servicePath.appending("char\(c)")
                let id = GATTCharacteristicID(service: service.name, characteristic: item.name)
                objects.append((path, [characteristic(item, id, servicePath, path)]))
                characteristics[id] = path
                if item.isSecret { secrets.insert(id) }
                if notifySockets, item.notifiesThroughSockets { throughSockets.insert(id) }
                if item.isSecuredNotifying { securedNotifying.insert(id) }
                if let text = item.userDescription {
                    objects.append((try path.appending("desc0"), [Self.userDescriptionInterface(text, of: path)]))
                }
            }
        }
        self.root = root
        self.objects = objects
        self.characteristics = characteristics
        self.secrets = secrets
        self.securedNotifying = securedNotifying
        self.throughSockets = throughSockets
    }

    /// Exports the tree for one caller (bluetoothd's unique name), the only one its objects
    /// answer: no local process can read, write or forge a central's write through them. On a
    /// refusal, what was exported goes again and the error is thrown.
    func export(on connection: DBusConnection, for caller: String) async throws {
        await connection.exportObjectManager(at: root, caller: caller)
        for (index, object) in objects.enumerated() {
            do {
                try await connection.export(object.interfaces, at: object.path, caller: caller)
            } catch {
                await Self.unexport(root, objects.prefix(index), from: connection)
                throw error
            }
        }
    }

    /// Removes every object, the reverse of the export order, the root last.
    func unexport(from connection: DBusConnection) async {
        await Self.unexport(root, objects[...], from: connection)
    }

    private static func unexport(
        _ root: DBusObjectPath, _ objects: ArraySlice<(path: DBusObjectPath, interfaces: [DBusInterface])>,
        from connection: DBusConnection
    ) async {
        for object in objects.reversed() { await connection.unexport(object.path) }
        await connection.unexport(root)
    }

    static func serviceInterface(_ service: GATTService) -> DBusInterface {
        DBusInterface(name: BlueZ.serviceInterface, properties: [
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
        return DBusInterface(name: BlueZ.descriptorInterface, methods: [read], properties: [
            DBusProperty("UUID", value: .string(GATTCharacteristic.userDescriptionUUID.uuidString)),
            DBusProperty("Characteristic", value: .objectPath(characteristic)),
            DBusProperty("Flags", value: .strings(["read"])),
            DBusProperty("Value", value: .bytes(value)),
        ])
    }

    /// The arguments of ReadValue and WriteValue.
    static let optionsArgument = DBusArgument("options", .dictionary(key: .string, value: .variant))
    static let valueArgument = DBusArgument("value", .array(.byte))

    /// What a read returns: `value` from the call's `offset` option on (a long read asks for the
    /// rest); InvalidOffset past its end.
    static func rest(of value: [UInt8], options: [String: DBusValue]) throws(DBusError) -> [UInt8] {
        let offset = Int(options["offset"]?.uint16 ?? 0)
        guard offset <= value.count else {
            throw DBusError(BlueZ.invalidOffset, "offset \(offset) is past the value's \(value.count) bytes")
        }
        return Array(value[offset...])
    }
}
