import AdvertiserControl
import AdvertiserDaemon
import DBus
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// The values of secured characteristics (a central must be bonded to read or write them) as a
/// local user who is not trusted sees them: not in Status, not in the broadcasts. Trusted
/// clients (root, group bleadvd) get them from Status and, subscribed, in signals sent to
/// them alone.
@Suite("Secured values on the local bus", .timeLimit(.minutes(3)))
struct SecuredValuesTests {
    /// ServiceTests' lamp (its `label` and `brightness` take writes, so they are secured,
    /// `encrypted`, by default; `power.level` only reads and notifies: open), and `lamp.mode`,
    /// writable and saying `security = "none"`.
    static let config = ServiceTests.config + """

        [service.lamp.characteristic.mode]
        uuid = "6e400004-b5a3-f393-e0a9-e50e24dcca9e"
        format = "utf8"
        flags = ["read", "write"]
        security = "none"
        value = "warm"
        """
    static let label = GATTCharacteristicID(service: "lamp", characteristic: "label")

    func session(onDBus: Bool = false, trusting: Bool) async throws -> DaemonSession {
        try await DaemonSession(onDBus: onDBus, config: Self.config, users: [":1.7": 1000], script: { mock in
            mock.scriptRegisterApplication(.always(.success(RegistrationID("/org/bleadvd/gatt/app1"))))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptAgent()
            mock.scriptUpdateValue(.always(.success(())))
        }, trusts: { _ in trusting })
    }

    /// On the in-memory bus, the lamp's `signal`s: to everyone, or to `:1.7` after it subscribed.
    func lines<Signal: ControlSignal>(_ session: DaemonSession, _ signal: Signal.Type, of lamp: @escaping @Sendable (Signal) -> String, subscribed: Bool) async throws
        -> Following<Signal> {
        let lines = try session.following(signal, to: subscribed ? .subscriber(":1.7") : .everyone) { lamp($0) == "lamp" }
        if subscribed { try await session.daemon.advertising.subscribe(":1.7") }
        return lines
    }

    @Test("Status leaves a secured characteristic's value out for a user bleadvd does not trust, and shows the open ones")
    func statusHidesSecuredValues() async throws {
        let session = try await session(trusting: false)

        let status = await session.daemon.advertising.status(for: ":1.7")

        #expect(status["lamp"]?.values["label"] == nil, "\(status)")
        #expect(status["lamp"]?.values["mode"] == "warm", "\(status)")
        #expect(status["power"]?.values["level"] == "80", "\(status)")
    }

    @Test("Status shows a secured characteristic's value to a trusted user")
    func statusShowsSecuredValuesToTrusted() async throws {
        let session = try await session(trusting: true)

        let status = await session.daemon.advertising.status(for: ":1.7")

        #expect(status["lamp"]?.values["label"] == "desk", "\(status)")
    }

    @Test("a central's write to a secured characteristic is broadcast without its value, and sent whole to a subscriber")
    func writeBroadcastWithoutValue() async throws {
        let session = try await session(trusting: true)
        var broadcast = try await lines(session, ControlAPI.Written.self, of: \.service, subscribed: false)
        var subscribed = try await lines(session, ControlAPI.Written.self, of: \.service, subscribed: true)

        session.mock.emit(.gatt(GATTEvent(Self.label, .written(Array("sofa".utf8), .text("sofa")), central: "AA:BB:CC:DD:EE:FF")))
        let everyone = await broadcast.next()
        let subscriber = await subscribed.next()

        #expect(everyone?.shown == "lamp.label (not shown)")
        #expect(subscriber?.shown == "lamp.label sofa")
    }

    @Test("a central's write to a secured characteristic reaches no journal line, which group adm reads; an open one's does")
    func securedWriteNotLogged() async throws {
        let session = try await session(trusting: true)
        var broadcast = try await lines(session, ControlAPI.Written.self, of: \.service, subscribed: false)
        let mode = GATTCharacteristicID(service: "lamp", characteristic: "mode")

        session.mock.emit(.gatt(GATTEvent(Self.label, .written(Array("sofa".utf8), .text("sofa")), central: "AA:BB:CC:DD:EE:FF")))
        session.mock.emit(.gatt(GATTEvent(mode, .written(Array("cold".utf8), .text("cold")), central: "AA:BB:CC:DD:EE:FF")))
        _ = await broadcast.next()
        _ = await broadcast.next()

        #expect(!session.logs.all.contains { $0.contains("sofa") }, "\(session.logs.all)")
        #expect(session.logs.all.contains { $0.contains("lamp.label: AA:BB:CC:DD:EE:FF wrote a secured value (4 bytes, not shown)") }, "\(session.logs.all)")
        #expect(session.logs.all.contains { $0.contains("lamp.mode: AA:BB:CC:DD:EE:FF wrote \"cold\"") }, "\(session.logs.all)")
    }

    @Test("a secured value set with bleadvctl reaches no journal line")
    func securedSetNotLogged() async throws {
        let session = try await session(trusting: true)

        try await session.daemon.advertising.set("lamp", ["label": .string("sofa")])

        #expect(!session.logs.all.contains { $0.contains("sofa") }, "\(session.logs.all)")
        #expect(session.logs.all.contains { $0.contains("lamp: set label=(secured: not shown)") }, "\(session.logs.all)")
    }

    /// `bleadvctl set lamp --stdin` given `input` on its standard input: its exit status and errors.
    func setLamp(_ session: DaemonSession, stdin input: String) async throws -> (status: Int32, errors: String) {
        let set = try Child(product("bleadvctl"), ["set", "lamp", "--stdin"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address], input: true)
        set.stdin!.write(Data(input.utf8))
        try set.stdin!.close()
        let status = await set.exitStatus()
        return (status, String(decoding: set.stderr!.readToEndRetrying(), as: UTF8.self))
    }

    @Test("bleadvctl set --stdin takes KEY=VALUE lines from standard input, so that a secret is on no command line")
    func setFromStandardInput() async throws {
        let session = try await session(onDBus: true, trusting: true)

        let set = try await setLamp(session, stdin: "label=sofa\n\nmode=cold\n")

        #expect(set.status == 0, "\(set.errors)")
        let values = await session.daemon.advertising.status()["lamp"]?.values
        #expect(values?["label"] == "sofa")
        #expect(values?["mode"] == "cold")
    }

    @Test("bleadvctl set --stdin refuses a line that is not KEY=VALUE, naming its number, and sets nothing")
    func setFromStandardInputRefusesBadLine() async throws {
        let session = try await session(onDBus: true, trusting: true)

        let set = try await setLamp(session, stdin: "label=sofa\nsecret\n")

        #expect(set.status == 2)
        #expect(set.errors.contains("standard input, line 2 is not KEY=VALUE"), "\(set.errors)")
        #expect(!set.errors.contains("secret"), "\(set.errors)")
        #expect(await session.daemon.advertising.status()["lamp"]?.values["label"] == "desk")
    }

    @Test("values set on a service are broadcast without the secured ones, and sent whole to a subscriber")
    func valuesBroadcastWithoutSecured() async throws {
        let session = try await session(trusting: true)
        var broadcast = try await lines(session, ControlAPI.ValuesChanged.self, of: \.name, subscribed: false)
        var subscribed = try await lines(session, ControlAPI.ValuesChanged.self, of: \.name, subscribed: true)

        try await session.daemon.advertising.set("lamp", ["label": .string("sofa")])
        let everyone = await broadcast.next()
        let subscriber = await subscribed.next()

        #expect(everyone?.values.keys.sorted() == ["mode"], "\(String(describing: everyone))")
        #expect(subscriber?.values.keys.sorted() == ["brightness", "label", "mode"], "\(String(describing: subscriber))")
    }

    @Test("Subscribe from a user bleadvd does not trust is refused with AccessDenied")
    func subscribeRefusedForUntrusted() async throws {
        let session = try await session(trusting: false)

        let error = await #expect(throws: PeripheralError.self) { try await session.daemon.advertising.subscribe(":1.7") }

        #expect(error?.code == .accessDenied)
    }

    @Test("subscribers that left the bus make room: as many as bleadvd takes come and go, and the next is taken")
    func departedSubscribersForgotten() async throws {
        let session = try await session(onDBus: true, trusting: true)
        for _ in 0..<Subscribers.most {
            let client = try await DBusConnection.connect(to: .address(session.bus.address))
            _ = try await client.call(destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface,
                                      member: ControlAPI.Method.subscribe.name)
            await client.close()
        }
        let next = try await DBusConnection.connect(to: .address(session.bus.address))

        // The departures reach the daemon in their time: the next is taken once they have.
        try await eventually("a subscription is taken again") {
            (try? await next.call(destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface,
                                  member: ControlAPI.Method.subscribe.name)) != nil
        }
    }

    @Test("one user holds at most four subscriptions: its fifth connection's Subscribe is refused, saying why, and one leaving makes room")
    func subscriptionsPerUser() async throws {
        let session = try await session(onDBus: true, trusting: true)
        var held: [DBusConnection] = []
        for _ in 0..<Subscribers.perUser {
            let client = try await DBusConnection.connect(to: .address(session.bus.address))
            _ = try await client.call(destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface,
                                      member: ControlAPI.Method.subscribe.name)
            held.append(client)
        }
        let fifth = try await DBusConnection.connect(to: .address(session.bus.address))

        let refusal = await #expect(throws: DBusError.self) {
            _ = try await fifth.call(destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface,
                                     member: ControlAPI.Method.subscribe.name)
        }
        await held.removeFirst().close()

        #expect(refusal?.message.contains("this user has 4 subscriptions already") == true, "\(String(describing: refusal))")
        try await eventually("the fifth is taken once one left") {
            (try? await fifth.call(destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface,
                                   member: ControlAPI.Method.subscribe.name)) != nil
        }
    }

    /// bleadvctl watch on the session's bus, and the line it prints for a write of `label`
    /// (written again until one is printed: watch may not have subscribed yet).
    func watchWrite(_ session: DaemonSession) async throws -> (Child, String) {
        let watch = try Child(product("bleadvctl"), ["watch"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address])
        let writing = Task {
            while !Task.isCancelled {
                session.mock.emit(.gatt(GATTEvent(Self.label, .written(Array("sofa".utf8), .text("sofa")), central: "AA:BB:CC:DD:EE:FF")))
                try? await Task.sleep(for: .milliseconds(50))
                // A write within the interval is announced at its end: the interval must pass.
                session.clock.advance(by: .milliseconds(100))
            }
        }
        defer { writing.cancel() }
        return (watch, try await PrivateBus.line(from: watch.stdout))
    }

    @Test("bleadvctl watch run by a trusted user prints a secured write whole, and not its broadcast (sent first) too")
    func watchPrintsSecuredWriteWhole() async throws {
        let session = try await session(onDBus: true, trusting: true)

        let (watch, line) = try await watchWrite(session)
        defer { watch.kill(SIGTERM) }

        #expect(line == "written lamp label \"sofa\" AA:BB:CC:DD:EE:FF")
    }

    @Test("bleadvctl watch run by a user bleadvd does not trust prints a secured write without its value, and says why")
    func watchLeavesSecuredValueOut() async throws {
        let session = try await session(onDBus: true, trusting: false)

        let (watch, line) = try await watchWrite(session)
        watch.kill(SIGTERM)
        _ = await watch.exitStatus()

        #expect(line == "written lamp label  AA:BB:CC:DD:EE:FF")
        let errors = String(decoding: watch.stderr!.readToEndRetrying(), as: UTF8.self)
        #expect(errors.contains("bleadvctl: links, writes and the values of secured characteristics are left out: they are shown to root and group bleadvd alone"))
    }
}
