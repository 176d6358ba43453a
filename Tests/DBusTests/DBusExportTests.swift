import Foundation
import TestSupport
import Testing

@testable import DBus

/// Our exported objects, called by busctl (systemd's sd-bus), an implementation we did not write.
@Suite("Exported objects seen by busctl", .timeLimit(.minutes(3)))
struct DBusExportTests {
    static let interface = "test.Swift1"
    static let path: DBusObjectPath = "/test/object"

    /// The argument list of `Everything`: every basic type, a variant, a dictionary, a struct, an array.
    static let everythingTypes: [DBusType] = [
        .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .string, .objectPath,
        .signature, .variant, .dictionary(key: .string, value: .variant), .structure([.int32, .string]), .array(.string),
    ]

    /// A service on a private bus with one object: `Everything` echoes its arguments and records
    /// them; `Name` is writable (not to ""), `Count` read-only.
    struct Service {
        let bus: PrivateBus
        let connection: DBusConnection
        let received: Recorder<[DBusValue]>

        init() async throws {
            bus = try await PrivateBus()
            connection = try await DBusConnection.connect(to: bus)
            let received = Recorder<[DBusValue]>()
            self.received = received
            let arguments = DBusExportTests.everythingTypes.enumerated().map { DBusArgument("a\($0.offset)", $0.element) }
            await connection.exportObjectManager(at: .root)
            try await connection.export([DBusInterface(
                name: DBusExportTests.interface,
                methods: [
                    DBusMethod("Everything", inputs: arguments, outputs: arguments) { call in
                        await received.record(call.arguments)
                        return call.arguments
                    },
                    DBusMethod("Lie", outputs: [DBusArgument("text", .string)]) { _ in [.int32(1)] },
                ],
                properties: [
                    DBusProperty("Name", value: .string("first"), access: .readWrite) { value in
                        if value.string == "" { throw DBusError(.invalidArgs, "Name must not be empty") }
                    },
                    DBusProperty("Count", value: .uint32(3)),
                ],
                signals: [DBusSignalDescription("Changed", arguments: [DBusArgument("what", .string)])]
            )], at: DBusExportTests.path)
        }

        @discardableResult
        func busctl(_ arguments: String...) async throws -> String {
            try await TestSupport.busctl(bus, arguments)
        }
    }

    @Test("busctl calls a method with every type and both sides see the same values")
    func everyTypeFromBusctl() async throws {
        let service = try await Service()

        let output = try await service.busctl(
            "call", "--", service.connection.uniqueName, Self.path.rawValue, Self.interface, "Everything",
            "ybnqiuxtdsogva{sv}(is)as",
            "255", "true", "-32768", "65535", "-2147483648", "4294967295", "-9223372036854775808",
            "18446744073709551615", "2.5", "héllo wörld", "/a/b", "a{sv}", "ay", "2", "1", "2",
            "1", "k", "u", "7", "-1", "x", "2", "p", "q")
        let received = await service.received.values.first

        #expect(received == [
            .byte(255), .boolean(true), .int16(-32768), .uint16(65535), .int32(.min), .uint32(.max), .int64(.min),
            .uint64(.max), .double(2.5), .string("héllo wörld"), .objectPath("/a/b"), .signature("a{sv}"),
            .variant(.bytes([1, 2])), .variantDictionary(["k": .uint32(7)]), .structure([.int32(-1), .string("x")]),
            .strings(["p", "q"]),
        ])
        // busctl prints bytes beyond ASCII as octal escapes.
        #expect(output == """
            ybnqiuxtdsogva{sv}(is)as 255 true -32768 65535 -2147483648 4294967295 -9223372036854775808 \
            18446744073709551615 2.5 "h\\303\\251llo w\\303\\266rld" "/a/b" "a{sv}" ay 2 1 2 1 "k" u 7 -1 "x" 2 "p" "q"

            """)
    }

    @Test("busctl parses our introspection XML and lists methods, properties and signals")
    func introspection() async throws {
        let service = try await Service()

        let output = try await service.busctl("introspect", service.connection.uniqueName, Self.path.rawValue)
        let root = try await service.busctl("tree", "--list", service.connection.uniqueName)

        #expect(output.contains(".Everything"))
        #expect(output.contains("method    ybnqiuxtdsogva{sv}(is)as ybnqiuxtdsogva{sv}(is)as"))
        let nameLine = output.split(separator: "\n").first { $0.contains(".Name") }.map(String.init) ?? ""
        #expect(nameLine.split(separator: " ") == [".Name", "property", "s", "\"first\"", "emits-change", "writable"])
        #expect(output.contains(".Count"))
        #expect(output.contains(".Changed") && output.contains("signal"))
        #expect(output.contains("org.freedesktop.DBus.Properties"))
        #expect(root.contains("/test/object"))
    }

    @Test("busctl reads properties one at a time and all at once")
    func getProperties() async throws {
        let service = try await Service()

        let name = try await service.busctl("get-property", service.connection.uniqueName, Self.path.rawValue, Self.interface, "Name")
        let all = try await service.busctl(
            "call", service.connection.uniqueName, Self.path.rawValue, "org.freedesktop.DBus.Properties", "GetAll", "s",
            Self.interface)

        #expect(name == "s \"first\"\n")
        #expect(all == "a{sv} 2 \"Count\" u 3 \"Name\" s \"first\"\n")
    }

    @Test("busctl sets a writable property and PropertiesChanged announces it")
    func setProperty() async throws {
        let service = try await Service()
        let watcher = try await DBusConnection.connect(to: service.bus)
        var changes = try await watcher.signals(matching: DBusMatchRule(
            path: Self.path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")).makeAsyncIterator()

        try await service.busctl("set-property", service.connection.uniqueName, Self.path.rawValue, Self.interface, "Name", "s", "second")
        let stored = await service.connection.property("Name", of: Self.interface, at: Self.path)
        let announced = await changes.next()

        #expect(stored == .string("second"))
        #expect(announced?.body == [.string(Self.interface), .variantDictionary(["Name": .string("second")]), .strings([])])
    }

    @Test("a value set again is announced again only when asked to be: always")
    func setAgain() async throws {
        let service = try await Service()
        let watcher = try await DBusConnection.connect(to: service.bus)
        var changes = try await watcher.signals(matching: DBusMatchRule(
            path: Self.path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")).makeAsyncIterator()

        try await service.connection.setProperty("Name", of: Self.interface, at: Self.path, to: .string("first"))
        try await service.connection.setProperty("Name", of: Self.interface, at: Self.path, to: .string("first"), always: true)
        try await service.connection.setProperty("Name", of: Self.interface, at: Self.path, to: .string("second"))
        let first = await changes.next()
        let second = await changes.next()

        #expect(first?.body == [.string(Self.interface), .variantDictionary(["Name": .string("first")]), .strings([])])
        #expect(second?.body == [.string(Self.interface), .variantDictionary(["Name": .string("second")]), .strings([])])
    }

    @Test("a write-only property takes a Set but is left out of Get, GetAll and the object manager")
    func writeOnlyProperty() async throws {
        let bus = try await PrivateBus()
        let connection = try await DBusConnection.connect(to: bus)
        await connection.exportObjectManager(at: .root)
        try await connection.export([DBusInterface(
            name: Self.interface,
            properties: [DBusProperty("Level", value: .int16(0), access: .write), DBusProperty("Count", value: .uint32(3))]
        )], at: Self.path)
        let name = connection.uniqueName

        try await TestSupport.busctl(bus, ["set-property", name, Self.path.rawValue, Self.interface, "Level", "n", "--", "-6"])
        let all = try await TestSupport.busctl(
            bus, ["call", name, Self.path.rawValue, "org.freedesktop.DBus.Properties", "GetAll", "s", Self.interface])
        let managed = try await TestSupport.busctl(bus, ["call", name, "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"])
        let get = await #expect(throws: TestFailure.self) {
            try await TestSupport.busctl(bus, ["get-property", name, Self.path.rawValue, Self.interface, "Level"])
        }
        let introspection = try await TestSupport.busctl(bus, ["introspect", "--xml-interface", name, Self.path.rawValue])

        #expect(await connection.property("Level", of: Self.interface, at: Self.path) == .int16(-6))
        #expect(all == "a{sv} 1 \"Count\" u 3\n")
        #expect(!managed.contains("Level"))
        #expect(get?.description.contains("Access denied") == true, "\(get?.description ?? "")")
        #expect(introspection.contains("<property name=\"Level\" type=\"n\" access=\"write\"/>"))
    }

    @Test("setting a property is refused when read-only, of the wrong type, or refused by its handler", arguments: [
        (["Count", "u", "4"], "is read-only"),
        (["Name", "u", "4"], "has type 's', not 'u'"),
        (["Name", "s", ""], "Name must not be empty"),
    ])
    func setPropertyRefused(arguments: [String], reason: String) async throws {
        let service = try await Service()

        let error = await #expect(throws: TestFailure.self) {
            try await TestSupport.busctl(service.bus, ["set-property", service.connection.uniqueName, Self.path.rawValue, Self.interface] + arguments)
        }

        #expect(error?.description.contains(reason) == true, "\(error?.description ?? "")")
    }

    @Test("a call to an unknown method, interface or object gets the matching standard error", arguments: [
        ("/test/object", "test.Swift1", "Nope",
         "Error org.freedesktop.DBus.Error.UnknownMethod: no method test.Swift1.Nope at /test/object"),
        ("/test/object", "test.Other", "Nope",
         "Error org.freedesktop.DBus.Error.UnknownInterface: object /test/object has no interface test.Other"),
        ("/nothing/here", "test.Swift1", "Everything", "Error org.freedesktop.DBus.Error.UnknownObject: no object at /nothing/here"),
    ])
    func unknownTargets(path: String, interface: String, member: String, expected: String) async throws {
        let service = try await Service()

        let error = await #expect(throws: TestFailure.self) {
            try await dbusSend(service.bus, ["--dest=\(service.connection.uniqueName)", path, "\(interface).\(member)"])
        }

        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "")")
    }

    @Test("a call with the wrong argument types is refused before the handler runs")
    func wrongArguments() async throws {
        let service = try await Service()

        let error = await #expect(throws: TestFailure.self) {
            try await service.busctl("call", service.connection.uniqueName, Self.path.rawValue, Self.interface, "Everything", "s", "x")
        }
        let handled = await service.received.values

        #expect(error?.description.contains("Everything takes 'ybnqiuxtdsogva{sv}(is)as', not 's'") == true)
        #expect(handled.isEmpty)
    }

    @Test("a handler whose result does not match its declared outputs is answered with an error, not a wrong reply")
    func handlerResultChecked() async throws {
        let service = try await Service()

        let error = await #expect(throws: TestFailure.self) {
            try await service.busctl("call", service.connection.uniqueName, Self.path.rawValue, Self.interface, "Lie")
        }

        #expect(error?.description.contains("Lie returned 'i' but declares 's'") == true)
    }

    @Test("Peer.Ping is answered")
    func peerPing() async throws {
        let service = try await Service()

        let output = try await service.busctl("call", service.connection.uniqueName, "/", "org.freedesktop.DBus.Peer", "Ping")

        #expect(output == "")
    }

    @Test("GetManagedObjects lists exported objects with their properties")
    func managedObjects() async throws {
        let service = try await Service()

        let output = try await service.busctl(
            "call", service.connection.uniqueName, "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")

        #expect(output == "a{oa{sa{sv}}} 1 \"/test/object\" 1 \"test.Swift1\" 2 \"Count\" u 3 \"Name\" s \"first\"\n")
    }

    @Test("exporting and removing an object below an object manager announces it")
    func interfacesAddedAndRemoved() async throws {
        let service = try await Service()
        let watcher = try await DBusConnection.connect(to: service.bus)
        var announcements = try await watcher.signals(matching: DBusMatchRule(
            sender: service.connection.uniqueName, interface: "org.freedesktop.DBus.ObjectManager")).makeAsyncIterator()

        try await service.connection.export([DBusInterface(name: "test.Extra1", properties: [
            DBusProperty("On", value: .boolean(true)),
        ])], at: "/test/extra")
        await service.connection.unexport("/test/extra")
        let added = await announcements.next()
        let removed = await announcements.next()

        #expect(added?.member == "InterfacesAdded")
        #expect(added?.body == [.objectPath("/test/extra"), .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), [
            DBusDictEntry(.string("test.Extra1"), .variantDictionary(["On": .boolean(true)])),
        ])])
        #expect(removed?.member == "InterfacesRemoved")
        #expect(removed?.body == [.objectPath("/test/extra"), .strings(["test.Extra1"])])
    }

    @Test("a call flagged no-reply-expected runs its handler and gets no reply")
    func noReplyExpected() async throws {
        let service = try await Service()
        let monitor = try await MonitorProcess(bus: service.bus)
        let ours = service.connection.uniqueName

        try await service.busctl("call", "--expect-reply=no", "--", ours, Self.path.rawValue, Self.interface, "Everything",
                           "ybnqiuxtdsogva{sv}(is)as", "1", "false", "1", "1", "1", "1", "1", "1", "1", "s", "/", "", "b", "true",
                           "0", "1", "s", "0")
        _ = try await service.busctl("get-property", ours, Self.path.rawValue, Self.interface, "Count")
        let handled = await service.received.values
        let replies = try monitor.finish().split(separator: "\n").filter {
            $0.hasPrefix("method return") && $0.contains("sender=\(ours) ")
        }

        #expect(handled.count == 1)
        #expect(replies.count == 1, "only get-property is answered: \(replies)")
    }
}

/// `dbus-monitor` on a private bus, recording everything until `finish()`.
final class MonitorProcess {
    private let process: Child

    init(bus: PrivateBus) async throws {
        process = try Child("/usr/bin/dbus-monitor", ["--address", bus.address, "--monitor"], captureErrors: false)
        // dbus-monitor prints its own BecomeMonitor exchange first; wait for it (off the pool).
        var seen = ""
        while !seen.contains("NameLost") {
            seen += try await PrivateBus.line(from: process.stdout) + "\n"
        }
    }

    func finish() throws -> String {
        process.terminate()
        return String(decoding: process.stdout.readToEndRetrying(), as: UTF8.self)
    }
}

extension DBusExportTests {
    @Test("a property removed is announced invalidated and busctl's GetAll no longer lists it")
    func removeProperty() async throws {
        let service = try await Service()
        let watcher = try await DBusConnection.connect(to: service.bus)
        var changes = try await watcher.signals(matching: DBusMatchRule(
            path: Self.path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")).makeAsyncIterator()

        try await service.connection.removeProperty("Count", of: Self.interface, at: Self.path)
        let announced = await changes.next()
        let all = try await service.busctl("call", service.connection.uniqueName, Self.path.rawValue, "org.freedesktop.DBus.Properties", "GetAll", "s", Self.interface)

        #expect(announced?.body == [.string(Self.interface), .variantDictionary([:]), .strings(["Count"])])
        #expect(all == "a{sv} 1 \"Name\" s \"first\"\n")
    }

    @Test("a property put in is announced with its value and busctl's GetAll lists it")
    func putProperty() async throws {
        let service = try await Service()
        let watcher = try await DBusConnection.connect(to: service.bus)
        var changes = try await watcher.signals(matching: DBusMatchRule(
            path: Self.path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")).makeAsyncIterator()

        try await service.connection.putProperty(DBusProperty("Level", value: .int16(-6)), of: Self.interface, at: Self.path)
        let announced = await changes.next()
        let all = try await service.busctl("call", service.connection.uniqueName, Self.path.rawValue, "org.freedesktop.DBus.Properties", "GetAll", "s", Self.interface)

        #expect(announced?.body == [.string(Self.interface), .variantDictionary(["Level": .int16(-6)]), .strings([])])
        #expect(all == "a{sv} 3 \"Count\" u 3 \"Level\" n -6 \"Name\" s \"first\"\n")
    }
}
