@testable import DBus
import TestSupport

/// Values shared by the bus tests.
enum Fixtures {
    /// One value of every D-Bus type, nested, in the signature `Peers/peer.py` declares for
    /// `EchoAll`: `ybnqiuxtdsogva{sv}(iasv)aa{oa{sv}}a{ya(by)}`.
    static let everyType: [DBusValue] = [
        .byte(255),
        .boolean(true),
        .int16(.min),
        .uint16(.max),
        .int32(.min),
        .uint32(.max),
        .int64(.min),
        .uint64(.max),
        .double(-1.5e-300),
        .string("héllo ✓ 🚀 \"quoted\" 'single'"),
        .objectPath("/org/bluez/hci0"),
        .signature("a{sv}"),
        .variant(.variant(.structure([.string("deep"), .bytes([0, 1, 0xFF])]))),
        .variantDictionary(["name": .string("Thermo"), "empty": .bytes([]), "list": .strings(["a", "b"])]),
        .structure([.int32(-1), .strings([]), .variant(.uint16(7))]),
        .array(.dictionary(key: .objectPath, value: .dictionary(key: .string, value: .variant)), [
            .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .variant), [
                DBusDictEntry(.objectPath("/a"), .variantDictionary(["on": .boolean(false)])),
            ]),
            .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .variant), []),
        ]),
        .dictionary(key: .byte, value: .array(.structure([.boolean, .byte])), [
            DBusDictEntry(.byte(1), .array(.structure([.boolean, .byte]), [.structure([.boolean(true), .byte(2)])])),
            DBusDictEntry(.byte(2), .array(.structure([.boolean, .byte]), [])),
        ]),
    ]

    static let peerPath: DBusObjectPath = "/peer"
}

extension DBusConnection {
    /// Connects to a private test bus.
    static func connect(to bus: PrivateBus) async throws -> DBusConnection {
        try await connect(to: .address(bus.address))
    }

    /// Calls a method of the Python peer.
    func callPeer(
        _ member: String, _ arguments: [DBusValue] = [], expecting: DBusSignature? = nil,
        timeout: Duration = DBusConnection.defaultTimeout
    ) async throws -> [DBusValue] {
        try await call(
            destination: PythonPeer.name, path: Fixtures.peerPath, interface: PythonPeer.interface, member: member,
            arguments, expecting: expecting, timeout: timeout)
    }
}
