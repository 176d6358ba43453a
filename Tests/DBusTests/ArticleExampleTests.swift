import DBus
import TestSupport
import Testing

/// The DBus article's example, run on a private bus where a peer stands in for BlueZ: the same
/// code, with the bus's address for `.system` and the endless signal loop ended by a `break`.
@Suite("The DBus article's example", .timeLimit(.minutes(3)))
struct ArticleExampleTests {
    /// A peer owning `org.bluez` with an object manager at `/` and one adapter under it.
    func bluez(on bus: PrivateBus) async throws -> DBusConnection {
        let peer = try await DBusConnection.connect(to: .address(bus.address))
        try await peer.requestName("org.bluez")
        await peer.exportObjectManager(at: "/")
        try await peer.export(
            [DBusInterface(name: "org.bluez.Adapter1", properties: [DBusProperty("Address", value: .string("54:48:E6:8F:80:A5"))])],
            at: "/org/bluez/hci0")
        return peer
    }

    @Test("the example finds bluetoothd's owner, objects and adapter address, serves Hello, and hears InterfacesAdded")
    func example() async throws {
        let bus = try await PrivateBus()
        let peer = try await bluez(on: bus)

        let connection = try await DBusConnection.connect(to: .address(bus.address))
        let owner = try await connection.nameOwner("org.bluez")
        let reply = try await connection.call(
            destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.ObjectManager",
            member: "GetManagedObjects", expecting: "a{oa{sa{sv}}}", timeout: .seconds(5))
        let address = try await DBusProxy(connection, destination: "org.bluez", path: "/org/bluez/hci0")
            .property("Address", of: "org.bluez.Adapter1")
        let hello = DBusMethod("Hello", inputs: [DBusArgument("name", .string)], outputs: [DBusArgument("greeting", .string)]) { call in
            [.string("hello, " + (call.arguments[0].string ?? "?"))]
        }
        try await connection.export(
            [DBusInterface(name: "org.example.Greeter1", methods: [hello], properties: [DBusProperty("Count", value: .uint32(0))])],
            at: "/org/example/Greeter")
        let signals = try await connection.signals(matching: DBusMatchRule(sender: "org.bluez", member: "InterfacesAdded"))
        try await peer.export([DBusInterface(name: "org.bluez.Adapter1")], at: "/org/bluez/hci1")
        var added: [DBusValue] = []
        for await signal in signals {
            added = signal.body
            break
        }
        let greeting = try await peer.call(
            destination: connection.uniqueName, path: "/org/example/Greeter", interface: "org.example.Greeter1",
            member: "Hello", [.string("world")], expecting: "s")

        #expect(owner == peer.uniqueName)
        #expect(reply[0].dictionaryEntries?.map(\.key) == [.objectPath("/org/bluez/hci0")])
        #expect(address == .string("54:48:E6:8F:80:A5"))
        #expect(greeting == [.string("hello, world")])
        #expect(added.first == .objectPath("/org/bluez/hci1"))
    }
}
