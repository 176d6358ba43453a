import Foundation
import TestSupport
import Testing

@testable import DBus

/// Objects exported for one caller answer that caller only: what bleadvd exports for bluetoothd
/// must not take a forged write or a TxPower change from a local process.
@Suite("Objects kept for one caller", .timeLimit(.minutes(3)))
struct DBusCallerTests {
    static let interface = "test.Kept1"
    static let path: DBusObjectPath = "/kept/app/object"
    static let root: DBusObjectPath = "/kept/app"

    /// An object manager and one object below it, both for `caller`; `Poke` records each call.
    struct Kept {
        let bus: PrivateBus
        let connection: DBusConnection
        let pokes: Recorder<String>

        init(for caller: (PrivateBus) async throws -> String) async throws {
            bus = try await PrivateBus()
            connection = try await DBusConnection.connect(to: bus)
            let pokes = Recorder<String>()
            self.pokes = pokes
            let caller = try await caller(bus)
            await connection.exportObjectManager(at: DBusCallerTests.root, caller: caller)
            try await connection.export([DBusInterface(
                name: DBusCallerTests.interface,
                methods: [DBusMethod("Poke", inputs: [DBusArgument("what", .string)]) { call in
                    await pokes.record(call.arguments[0].string ?? "")
                    return []
                }],
                properties: [DBusProperty("Level", value: .int16(1), access: .readWrite)]
            )], at: DBusCallerTests.path, caller: caller)
        }
    }

    @Test("every other sender is refused with AccessDenied naming the caller, whatever it asks of the object", arguments: [
        ["PATH", "test.Kept1.Poke", "string:forged"],
        ["PATH", "org.freedesktop.DBus.Properties.Get", "string:test.Kept1", "string:Level"],
        ["PATH", "org.freedesktop.DBus.Properties.Set", "string:test.Kept1", "string:Level", "variant:int16:5"],
        ["PATH", "org.freedesktop.DBus.Properties.GetAll", "string:test.Kept1"],
        ["ROOT", "org.freedesktop.DBus.ObjectManager.GetManagedObjects"],
    ])
    func othersRefused(request: [String]) async throws {
        let kept = try await Kept { _ in ":1.9999" }
        let path = request[0] == "PATH" ? Self.path.rawValue : Self.root.rawValue

        let error = await #expect(throws: TestFailure.self) {
            try await dbusSend(kept.bus, ["--dest=\(kept.connection.uniqueName)", path] + request.dropFirst())
        }

        #expect(error?.description.contains("Error org.freedesktop.DBus.Error.AccessDenied: \(path) answers :1.9999 only, not :1.") == true,
                "\(error?.description ?? "")")
        #expect(await kept.pokes.values.isEmpty)
        #expect(await kept.connection.property("Level", of: Self.interface, at: Self.path) == .int16(1))
    }

    @Test("anyone may introspect it: names and types, no values")
    func introspectionOpen() async throws {
        let kept = try await Kept { _ in ":1.9999" }

        let xml = try await TestSupport.busctl(kept.bus, ["introspect", "--xml-interface", kept.connection.uniqueName, Self.path.rawValue])

        #expect(xml.contains("<method name=\"Poke\">"))
    }

    /// An object kept for a connection of the test's, and that connection.
    func keptForCaller() async throws -> (Kept, DBusConnection) {
        let holder = Holder()
        let kept = try await Kept { bus in
            let caller = try await DBusConnection.connect(to: bus)
            await holder.keep(caller)
            return caller.uniqueName
        }
        return (kept, await holder.connection!)
    }

    @Test("the caller it was exported for calls its methods and properties as before")
    func callerServed() async throws {
        let (kept, caller) = try await keptForCaller()
        let name = kept.connection.uniqueName

        _ = try await caller.call(destination: name, path: Self.path, interface: Self.interface, member: "Poke", [.string("from bluetoothd")])
        _ = try await caller.call(
            destination: name, path: Self.path, interface: "org.freedesktop.DBus.Properties", member: "Set",
            [.string(Self.interface), .string("Level"), .variant(.int16(7))])
        let managed = try await caller.call(
            destination: name, path: Self.root, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")

        #expect(await kept.pokes.values == ["from bluetoothd"])
        #expect(await kept.connection.property("Level", of: Self.interface, at: Self.path) == .int16(7))
        #expect("\(managed)".contains(Self.path.rawValue))
    }

    @Test("an object exported for anyone still answers every sender")
    func openObjectsUnchanged() async throws {
        let bus = try await PrivateBus()
        let connection = try await DBusConnection.connect(to: bus)
        try await connection.export([DBusInterface(name: Self.interface, properties: [DBusProperty("Level", value: .int16(1))])], at: Self.path)

        let level = try await TestSupport.busctl(bus, ["get-property", connection.uniqueName, Self.path.rawValue, Self.interface, "Level"])

        #expect(level == "n 1\n")
    }

    @Test("its PropertiesChanged and its manager's InterfacesAdded, which carry values, go to the caller alone: a bystander listening gets neither")
    func changesGoToTheCallerAlone() async throws {
        let (kept, caller) = try await keptForCaller()
        let bystander = try await DBusConnection.connect(to: kept.bus)
        let rule = DBusMatchRule(sender: kept.connection.uniqueName)
        var callerGets = try await caller.signals(matching: rule).makeAsyncIterator()
        var bystanderGets = try await bystander.signals(matching: rule).makeAsyncIterator()

        try await kept.connection.setProperty("Level", of: Self.interface, at: Self.path, to: .int16(5))
        try await kept.connection.export([DBusInterface(name: Self.interface, properties: [DBusProperty("Level", value: .int16(9))])],
                                         at: "/kept/app/second", caller: caller.uniqueName)
        // A broadcast after both: the first thing the bystander hears, if the two went to the caller alone.
        try await kept.connection.emit(path: Self.root, interface: Self.interface, member: "Marker")

        #expect(await callerGets.next()?.member == "PropertiesChanged")
        #expect(await callerGets.next()?.member == "InterfacesAdded")
        #expect(await bystanderGets.next()?.member == "Marker")
    }

    /// Keeps the caller's connection open for the test's length.
    actor Holder {
        var connection: DBusConnection?
        func keep(_ connection: DBusConnection) { self.connection = connection }
    }
}
