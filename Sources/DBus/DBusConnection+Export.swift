internal import CDBus

/// The standard interface names this connection implements for exported objects.
enum StandardInterface {
    static let properties = DBusProperties.interface
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let peer = "org.freedesktop.DBus.Peer"
}

extension DBusConnection {
    /// Exports an object: the given interfaces at `path`. When an object manager is exported
    /// at an ancestor path, it announces the object with `InterfacesAdded`.
    /// - Parameters:
    ///   - interfaces: what the object offers, in the order introspection shows them.
    ///   - path: where.
    ///   - caller: the unique name (`:1.42`) that alone may call the object's methods and
    ///     properties; every other sender is refused with `AccessDenied` before its call is
    ///     unpacked (introspection, names and types without values, stays open); its
    ///     `PropertiesChanged` go to that name alone (a signal with a destination: the values
    ///     it holds reach no one else on the bus). nil lets anyone the bus lets through call
    ///     it, and its changes are broadcast.
    /// - Throws: ``DBusError`` when a name or type is invalid or `path` is already exported.
    public func export(_ interfaces: [DBusInterface], at path: DBusObjectPath, caller: String? = nil) throws {
        guard objects[path] == nil else { throw DBusError.invalidArgs("an object is already exported at \(path)") }
        var object = ExportedObject(interfaces: [:], order: [], caller: caller)
        for interface in interfaces {
            try interface.validate()
            guard object.interfaces[interface.name] == nil else {
                throw DBusError.invalidArgs("interface \(interface.name) is given twice for \(path)")
            }
            object.interfaces[interface.name] = interface
            object.order.append(interface.name)
        }
        objects[path] = object
        for manager in managers(of: path) {
            try emit(path: manager, interface: StandardInterface.objectManager, member: "InterfacesAdded",
                     [.objectPath(path), Self.interfacesAndProperties(object)], to: objectManagers[manager] ?? nil)
        }
    }

    /// Removes the object at `path`, announcing `InterfacesRemoved` to its object manager, and
    /// stops serving an object manager at `path`. Removing a path that is not exported does nothing.
    public func unexport(_ path: DBusObjectPath) {
        objectManagers[path] = nil
        guard let object = objects.removeValue(forKey: path) else { return }
        for manager in managers(of: path) {
            try? emit(path: manager, interface: StandardInterface.objectManager, member: "InterfacesRemoved",
                      [.objectPath(path), .strings(object.order)], to: objectManagers[manager] ?? nil)
        }
    }

    /// Serves `org.freedesktop.DBus.ObjectManager` at `path`: `GetManagedObjects` lists every
    /// object exported below it, and exports and removals below it are announced.
    /// - Parameters:
    ///   - path: where.
    ///   - caller: the unique name that alone may call it and that alone is sent its
    ///     `InterfacesAdded` and `InterfacesRemoved` (which carry the objects' values); nil for
    ///     anyone, and broadcasts.
    public func exportObjectManager(at path: DBusObjectPath, caller: String? = nil) {
        objectManagers[path] = .some(caller)
    }

    /// The paths of all exported objects.
    public var exportedPaths: [DBusObjectPath] { objects.keys.sorted() }

    /// The current value of an exported property.
    public func property(_ name: String, of interface: String, at path: DBusObjectPath) -> DBusValue? {
        objects[path]?.interfaces[interface]?.properties.first { $0.name == name }?.value
    }

    /// Changes an exported property and, when it changed and emits changes, sends
    /// `PropertiesChanged`; with `always`, even when the value is the one the property has (a
    /// GATT value set again is a notification a central may be waiting for). With `announce`
    /// false the value changes silently (a GATT value whose notification must wait).
    /// - Throws: ``DBusError`` when there is no such property or the value's type is not the
    ///   property's.
    public func setProperty(
        _ name: String, of interface: String, at path: DBusObjectPath, to value: DBusValue, always: Bool = false, announce: Bool = true
    ) throws {
        guard let index = objects[path]?.interfaces[interface]?.properties.firstIndex(where: { $0.name == name }) else {
            throw DBusError(.unknownProperty, "no property \(interface).\(name) at \(path)")
        }
        try store(value, index: index, interface: interface, path: path, always: always, announce: announce)
    }

    /// Adds a property to an exported interface, or puts `property` in the place of the one of
    /// its name (its type and access may differ), and announces its value with
    /// `PropertiesChanged` when it is readable and emits changes: to the peer that reads the
    /// object, a property that appears is a changed one.
    /// - Throws: ``DBusError`` when there is no such interface at `path` or the value is invalid.
    public func putProperty(_ property: DBusProperty, of interface: String, at path: DBusObjectPath) throws {
        guard objects[path]?.interfaces[interface] != nil else {
            throw DBusError(.unknownInterface, "no interface \(interface) at \(path)")
        }
        try property.value.validate()
        var properties = objects[path]!.interfaces[interface]!.properties
        if let index = properties.firstIndex(where: { $0.name == property.name }) {
            properties[index] = property
        } else {
            properties.append(property)
        }
        objects[path]!.interfaces[interface]!.properties = properties
        if property.emitsChanged && property.access.isReadable {
            try emit(path: path, interface: StandardInterface.properties, member: DBusProperties.changed,
                     [.string(interface), .variantDictionary([property.name: property.value]), .strings([])], to: objects[path]!.caller)
        }
    }

    /// Removes a property from an exported interface and announces it invalidated with
    /// `PropertiesChanged` (its name, no value) when it was readable and emitted changes.
    /// Removing one that is not there does nothing.
    public func removeProperty(_ name: String, of interface: String, at path: DBusObjectPath) throws {
        guard let index = objects[path]?.interfaces[interface]?.properties.firstIndex(where: { $0.name == name }) else { return }
        let property = objects[path]!.interfaces[interface]!.properties.remove(at: index)
        if property.emitsChanged && property.access.isReadable {
            try emit(path: path, interface: StandardInterface.properties, member: DBusProperties.changed,
                     [.string(interface), .variantDictionary([:]), .strings([name])], to: objects[path]!.caller)
        }
    }

    private func store(
        _ value: DBusValue, index: Int, interface: String, path: DBusObjectPath, always: Bool = false, announce: Bool = true
    ) throws {
        let property = objects[path]!.interfaces[interface]!.properties[index]
        guard value.type == property.type else {
            throw DBusError.invalidArgs(
                "property \(interface).\(property.name) has type '\(property.type)', not '\(value.type)'")
        }
        try value.validate()
        guard always || value != property.value else { return }
        objects[path]!.interfaces[interface]!.properties[index].value = value
        if announce && property.emitsChanged && property.access.isReadable {
            try emit(path: path, interface: StandardInterface.properties, member: DBusProperties.changed,
                     [.string(interface), .variantDictionary([property.name: value]), .strings([])], to: objects[path]!.caller)
        }
    }

    private func managers(of path: DBusObjectPath) -> [DBusObjectPath] {
        objectManagers.keys.filter { path.isDescendant(of: $0) }.sorted()
    }

    private static func interfacesAndProperties(_ object: ExportedObject) -> DBusValue {
        .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), object.order.map { name in
            DBusDictEntry(.string(name), object.interfaces[name]!.readableValues)
        })
    }

    // MARK: Incoming method calls

    /// Answers a method call addressed to this connection, which ``route(_:signature:)`` took:
    /// `method` is the exported method it names, nil for the standard interfaces. Runs on the
    /// connection's event loop.
    func handleMethodCall(_ call: DBusMessage, method: DBusMethod?) {
        guard let path = call.path, let member = call.member else { return }
        if let method {
            // On this connection's event loop, and so are the default actors the handler calls:
            // a call to bleadvd and its call to BlueZ crossed threads four times without.
            Task(executorPreference: eventLoop) { await self.run(method, for: call) }
            return
        }
        let result: Result<[DBusValue], DBusError>
        switch call.interface {
        case StandardInterface.properties?:
            result = handleProperties(call, path: path, member: member)
        case StandardInterface.objectManager?:
            result = .success([managedObjects(below: path)])
        default:
            result = introspect(path)
        }
        reply(to: call, with: result)
    }

    /// What `call` (its header, and its body's `signature`) asks for: the exported method it
    /// names, nil for a standard interface's member, or why it is refused (no such object,
    /// interface or method, or arguments of another signature). Needs nothing of the body, so
    /// a refused call is never unpacked.
    func route(_ call: DBusMessage, signature: String) -> Result<DBusMethod?, DBusError> {
        guard let path = call.path, let member = call.member else {
            return .failure(.invalidArgs("a method call needs a path and a member"))
        }
        let standard: [String: [String: String]] = [
            StandardInterface.introspectable: ["Introspect": ""],
            StandardInterface.properties: ["Get": "ss", "GetAll": "s", "Set": "ssv"],
            StandardInterface.objectManager: objectManagers[path] != nil ? ["GetManagedObjects": ""] : [:],
        ]
        // An object kept for one caller refuses everyone else whatever they ask of it, but its
        // introspection (names and types, no values).
        if call.interface != StandardInterface.introspectable,
           let caller = objects[path]?.caller ?? objectManagers[path] ?? nil, call.sender != caller {
            return .failure(DBusError(.accessDenied, "\(path) answers \(caller) only, not \(call.sender ?? "an unnamed sender")"))
        }
        if let interface = call.interface, let members = standard[interface] {
            guard let expected = members[member] else {
                return .failure(DBusError(.unknownMethod, "no method \(interface).\(member) at \(path)"))
            }
            if interface == StandardInterface.properties, objects[path] == nil {
                return .failure(DBusError(.unknownObject, "no object at \(path)"))
            }
            return signature == expected
                ? .success(nil) : .failure(.invalidArgs("\(interface).\(member) takes '\(expected)', not '\(signature)'"))
        }
        guard let object = objects[path] else {
            return .failure(DBusError(.unknownObject, "no object at \(path)"))
        }
        let candidates: [DBusInterface]
        if let name = call.interface {
            guard let interface = object.interfaces[name] else {
                return .failure(DBusError(.unknownInterface, "object \(path) has no interface \(name)"))
            }
            candidates = [interface]
        } else {
            candidates = object.order.compactMap { object.interfaces[$0] }
        }
        guard let method = candidates.lazy.compactMap({ $0.methods.first { $0.name == member } }).first else {
            return .failure(DBusError(.unknownMethod, "no method \(call.what.isEmpty ? member : call.what) at \(path)"))
        }
        let expected = DBusSignature(types: method.inputs.map(\.type)).text
        return signature == expected ? .success(method) : .failure(.invalidArgs("\(member) takes '\(expected)', not '\(signature)'"))
    }

    private func run(_ method: DBusMethod, for call: DBusMessage) async {
        let result: Result<[DBusValue], DBusError>
        do {
            let values = try await method.handler(DBusMethodCall(message: call))
            let declared = DBusSignature(types: method.outputs.map(\.type))
            let actual = DBusSignature(types: values.map(\.type))
            result = actual == declared
                ? .success(values)
                : .failure(DBusError(.failed, "\(method.name) returned '\(actual.text)' but declares '\(declared.text)'"))
        } catch let error as DBusError {
            result = .failure(error)
        } catch {
            result = .failure(DBusError(.failed, "\(error)"))
        }
        reply(to: call, with: result)
    }

    /// Sends the method return or error for `call`, unless the caller asked for no reply.
    func reply(to call: DBusMessage, with result: Result<[DBusValue], DBusError>) {
        guard !call.noReplyExpected, let sender = call.sender else { return }
        var message: DBusMessage
        switch result {
        case .success(let values):
            message = DBusMessage(kind: .methodReturn, destination: sender, replySerial: call.serial, body: values)
        case .failure(let error):
            message = DBusMessage(
                kind: .error, errorName: error.name.rawValue, destination: sender, replySerial: call.serial,
                body: [.string(error.message)])
        }
        do {
            try send(message)
        } catch {
            // The reply itself was invalid (e.g. a handler's error name): tell the caller so.
            message = DBusMessage(
                kind: .error, errorName: DBusError.Name.failed.rawValue, destination: sender,
                replySerial: call.serial, body: [.string("the reply could not be sent: \(error)")])
            try? send(message)
        }
    }

    private func introspect(_ path: DBusObjectPath) -> Result<[DBusValue], DBusError> {
        let children = childNames(of: path)
        let object = objects[path]
        guard object != nil || !children.isEmpty || path == .root || objectManagers[path] != nil else {
            return .failure(DBusError(.unknownObject, "no object at \(path)"))
        }
        let interfaces = object.map { object in object.order.compactMap { object.interfaces[$0] } } ?? []
        return .success([.string(DBusIntrospection.xml(
            interfaces: interfaces, children: children, isObjectManager: objectManagers[path] != nil))])
    }

    private func childNames(of path: DBusObjectPath) -> [String] {
        let prefix = path == .root ? "/" : path.rawValue + "/"
        var names = Set<String>()
        for other in objects.keys where other.rawValue.hasPrefix(prefix) && other != path {
            if let first = other.rawValue.dropFirst(prefix.count).split(separator: "/").first {
                names.insert(String(first))
            }
        }
        return names.sorted()
    }

    private func managedObjects(below path: DBusObjectPath) -> DBusValue {
        let entries = objects.keys.filter { $0.isDescendant(of: path) }.sorted().map { child in
            DBusDictEntry(.objectPath(child), Self.interfacesAndProperties(objects[child]!))
        }
        return .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)), entries)
    }

    private func handleProperties(_ call: DBusMessage, path: DBusObjectPath, member: String) -> Result<[DBusValue], DBusError> {
        guard let object = objects[path] else { return .failure(DBusError(.unknownObject, "no object at \(path)")) }
        let interfaceName = call.body[0].string!
        guard let interface = object.interfaces[interfaceName] else {
            // An empty interface name would mean "all"; D-Bus leaves it open, BlueZ never sends it.
            return member == "GetAll" && interfaceName.isEmpty
                ? .failure(.invalidArgs("GetAll needs an interface name"))
                : .failure(DBusError(.unknownInterface, "object \(path) has no interface \(interfaceName)"))
        }
        if member == "GetAll" {
            return .success([interface.readableValues])
        }
        let name = call.body[1].string!
        guard let index = interface.properties.firstIndex(where: { $0.name == name }) else {
            return .failure(DBusError(.unknownProperty, "\(interfaceName) has no property \(name)"))
        }
        let property = interface.properties[index]
        if member == "Get" {
            guard property.access.isReadable else {
                return .failure(DBusError(.accessDenied, "\(interfaceName).\(name) is write-only"))
            }
            return .success([.variant(property.value)])
        }
        guard property.access.isWritable else {
            return .failure(DBusError(.propertyReadOnly, "\(interfaceName).\(name) is read-only"))
        }
        guard let newValue = call.body[2].variantValue, newValue.type == property.type else {
            return .failure(.invalidArgs(
                "\(interfaceName).\(name) has type '\(property.type)', not '\(call.body[2].variantValue?.type.signature ?? "?")'"))
        }
        do {
            try property.onSet?(newValue)
            try store(newValue, index: index, interface: interfaceName, path: path)
            return .success([])
        } catch let error as DBusError {
            return .failure(error)
        } catch {
            return .failure(DBusError(.failed, "\(error)"))
        }
    }
}
