import DBus
import PeripheralBlueZ
import Testing

/// User bleadvd's bus policy lets it set any property of any BlueZ object and remove any device:
/// a bus policy cannot see paths or property names. bleadvd checks each such call before it goes
/// out (#64 item 9).
@Suite("the BlueZ calls a policy cannot narrow are checked before they go out")
struct BlueZCallCheckTests {
    static let pairable: [DBusValue] = [.string("org.bluez.Adapter1"), .string("Pairable"), .variant(.boolean(false))]

    @Test("an adapter's Powered and Pairable may be set", arguments: ["Powered", "Pairable"])
    func adapterSwitchesMayBeSet(name: String) {
        let arguments: [DBusValue] = [.string("org.bluez.Adapter1"), .string(name), .variant(.boolean(true))]

        #expect(BlueZ.refusal(of: .setProperty, at: "/org/bluez/hci0", arguments) == nil)
    }

    @Test("an adapter's Alias may be set to a string of at most 248 bytes")
    func aliasMayBeSet() {
        let arguments: [DBusValue] = [.string("org.bluez.Adapter1"), .string("Alias"), .variant(.string(String(repeating: "x", count: 248)))]

        #expect(BlueZ.refusal(of: .setProperty, at: "/org/bluez/hci0", arguments) == nil)
    }

    @Test("any other Properties.Set is refused", arguments: [
        ("/org/bluez/hci0", [DBusValue.string("org.bluez.Adapter1"), .string("Alias"), .variant(.boolean(true))]),
        ("/org/bluez/hci0", [DBusValue.string("org.bluez.Adapter1"), .string("Alias"), .variant(.string(String(repeating: "x", count: 249)))]),
        ("/org/bluez/hci0/dev_00_AA_02_00_00_01", [DBusValue.string("org.bluez.Device1"), .string("Alias"), .variant(.string("x"))]),
        ("/org/bluez/hci0", [DBusValue.string("org.bluez.Adapter1"), .string("Discoverable"), .variant(.boolean(true))]),
        ("/org/bluez/hci0", [DBusValue.string("org.bluez.Adapter1"), .string("Pairable"), .variant(.string("yes"))]),
        ("/org/bluez/hci0/dev_00_AA_02_00_00_01", [DBusValue.string("org.bluez.Device1"), .string("Trusted"), .variant(.boolean(true))]),
        ("/org/bluez/hci0/dev_00_AA_02_00_00_01", Self.pairable),
        ("/org/bluez", Self.pairable),
    ] as [(DBusObjectPath, [DBusValue])])
    func otherPropertiesRefused(path: DBusObjectPath, arguments: [DBusValue]) {
        #expect(BlueZ.refusal(of: .setProperty, at: path, arguments)?.contains("Powered, Pairable and Alias alone") == true)
    }

    @Test("a device is removed through its own adapter alone")
    func deviceOfAnotherAdapterRefused() {
        let device: [DBusValue] = [.objectPath("/org/bluez/hci1/dev_00_AA_02_00_00_01")]

        #expect(BlueZ.refusal(of: .removeDevice, at: "/org/bluez/hci1", device) == nil)
        #expect(BlueZ.refusal(of: .removeDevice, at: "/org/bluez/hci0", device) != nil)
        #expect(BlueZ.refusal(of: .removeDevice, at: "/org/bluez/hci0", [.objectPath("/org/bluez/hci0")]) != nil)
    }
}
