package import DBus
import Peripheral

/// The names BlueZ uses on the bus: its service, its interfaces, where its objects live.
package enum BlueZ {
    /// bluetoothd's well-known name.
    package static let service = "org.bluez"
    /// The path of BlueZ's object manager.
    package static let root: DBusObjectPath = .root
    /// An adapter (hci0, ...).
    package static let adapterInterface = "org.bluez.Adapter1"
    /// An adapter's advertising manager (present once the controller can advertise).
    package static let advertisingManagerInterface = "org.bluez.LEAdvertisingManager1"
    /// What BlueZ calls on a registered advertisement, and what it reads.
    package static let advertisementInterface = "org.bluez.LEAdvertisement1"
    /// An adapter's GATT manager, where applications are registered.
    static let gattManagerInterface = "org.bluez.GattManager1"
    /// A service of a registered application.
    package static let serviceInterface = "org.bluez.GattService1"
    /// A characteristic: what BlueZ reads, and calls as centrals act.
    package static let characteristicInterface = "org.bluez.GattCharacteristic1"
    /// A characteristic's descriptor.
    package static let descriptorInterface = "org.bluez.GattDescriptor1"
    /// The error bluetoothd turns into ATT's Invalid Offset.
    static let invalidOffset: DBusError.Name = "org.bluez.Error.InvalidOffset"
    /// What bluetoothd answers a central with as ATT's Insufficient Authorization (0x08).
    static let notAuthorized: DBusError.Name = "org.bluez.Error.NotAuthorized"
    /// What bluetoothd answers a central with ATT's 0x80 (an application error) for, when its
    /// message is not a number (src/gatt-database.c, `dbus_error_to_att_ecode`, 5.66 on).
    static let failed: DBusError.Name = "org.bluez.Error.Failed"

    /// Where bleadvd exports its advertisements for BlueZ: `/org/bleadvd/advertisement/N`.
    package static let advertisementRoot: DBusObjectPath = "/org/bleadvd/advertisement"
    /// Where bleadvd exports its GATT applications: `/org/bleadvd/gatt/appN`.
    static let applicationRoot: DBusObjectPath = "/org/bleadvd/gatt"

    /// Where agents are registered (at `/org/bluez`).
    static let agentManagerInterface = "org.bluez.AgentManager1"
    /// The path of the agent manager.
    static let agentManagerPath: DBusObjectPath = "/org/bluez"
    /// What bluetoothd calls on a pairing agent.
    package static let agentInterface = "org.bluez.Agent1"
    /// A remote device (a central that connected) under an adapter.
    static let deviceInterface = "org.bluez.Device1"
    /// How an agent refuses a request.
    static let rejected: DBusError.Name = "org.bluez.Error.Rejected"
    /// Where bleadvd exports its pairing agent.
    package static let agentPath: DBusObjectPath = "/org/bleadvd/agent"

    /// The capability an agent announces for a method: what it can show and take.
    static func capability(_ method: PairingMethod) -> String {
        switch method {
        case .justWorks: "NoInputNoOutput"
        case .passkey: "DisplayOnly"
        case .numericComparison: "DisplayYesNo"
        }
    }

    /// A device's adapter and address from its path (`/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`);
    /// nil for any other path.
    static func device(at path: DBusObjectPath) -> (adapter: String, address: String)? {
        let parts = path.rawValue.split(separator: "/")
        guard parts.count == 4, parts[0] == "org", parts[1] == "bluez", parts[3].hasPrefix("dev_") else { return nil }
        let address = String(parts[3].dropFirst(4).map { $0 == "_" ? ":" : $0 })
        return Bond.isAddress(address) ? (String(parts[2]), address) : nil
    }

    /// The path of a device under an adapter.
    /// - Throws: `PeripheralError` `invalid` when `address` is not an address.
    static func devicePath(_ address: String, adapter: String) throws -> DBusObjectPath {
        if let refusal = Bond.refusal(ofAddress: address) { throw PeripheralError(.invalid, refusal) }
        return try adapterPath(adapter).appending("dev_" + String(address.uppercased().map { $0 == ":" ? "_" : $0 }))
    }

    /// Every method bleadvd calls on bluetoothd, each by its interface and member: the bus
    /// policy lets user bleadvd call these and nothing else of BlueZ's (PolicyTests).
    package enum Method: CaseIterable, Sendable {
        case registerAdvertisement, unregisterAdvertisement
        case registerApplication, unregisterApplication
        case registerAgent, requestDefaultAgent, unregisterAgent
        case removeDevice
        case disconnectDevice
        case getManagedObjects
        /// `Properties.Set` (an adapter's `Powered`, `Pairable` and `Alias`).
        case setProperty

        package var interface: String {
            switch self {
            case .registerAdvertisement, .unregisterAdvertisement: BlueZ.advertisingManagerInterface
            case .registerApplication, .unregisterApplication: BlueZ.gattManagerInterface
            case .registerAgent, .requestDefaultAgent, .unregisterAgent: BlueZ.agentManagerInterface
            case .removeDevice: BlueZ.adapterInterface
            case .disconnectDevice: BlueZ.deviceInterface
            case .getManagedObjects: BlueZ.objectManagerInterface
            case .setProperty: DBusProperties.interface
            }
        }

        package var member: String {
            switch self {
            case .registerAdvertisement: "RegisterAdvertisement"
            case .unregisterAdvertisement: "UnregisterAdvertisement"
            case .registerApplication: "RegisterApplication"
            case .unregisterApplication: "UnregisterApplication"
            case .registerAgent: "RegisterAgent"
            case .requestDefaultAgent: "RequestDefaultAgent"
            case .unregisterAgent: "UnregisterAgent"
            case .removeDevice: "RemoveDevice"
            case .disconnectDevice: "Disconnect"
            case .getManagedObjects: "GetManagedObjects"
            case .setProperty: "Set"
            }
        }
    }

    /// Why a call must not go out; nil when it may. User bleadvd's bus policy lets it set any
    /// property of any BlueZ object and remove any device (a bus policy cannot see paths or
    /// property names), so each `Properties.Set` and `RemoveDevice` is checked here before it
    /// goes out: an adapter's `Powered`, `Pairable` and `Alias` (a string of at most
    /// ``maximumAliasLength`` bytes) alone, a device of the adapter called.
    /// Which bonds may go is Pairing's check (its record, or root's `--any`).
    package static func refusal(of method: Method, at path: DBusObjectPath, _ arguments: [DBusValue]) -> String? {
        switch method {
        case .setProperty:
            guard adapterName(of: path) != nil, arguments.count == 3, arguments[0].string == adapterInterface,
                  let name = arguments[1].string, let value = arguments[2].variantValue,
                  ["Powered", "Pairable"].contains(name) && value.boolean != nil
                    || name == "Alias" && value.string.map({ $0.utf8.count <= maximumAliasLength }) == true else {
                return "bleadvd sets an adapter's Powered, Pairable and Alias alone; Properties.Set on \(path) refused"
            }
        case .disconnectDevice:
            guard device(at: path) != nil, arguments.isEmpty else {
                return "bleadvd disconnects a device by its path alone; Disconnect on \(path) refused"
            }
        case .removeDevice:
            guard let adapter = adapterName(of: path), arguments.count == 1,
                  let device = arguments[0].objectPath.flatMap(Self.device(at:)), device.adapter == adapter else {
                return "bleadvd removes a device of the adapter it asks; RemoveDevice on \(path) refused"
            }
        default: break
        }
        return nil
    }

    /// The longest alias: HCI's local name, 248 bytes.
    package static let maximumAliasLength = 248

    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    /// The signature of `GetManagedObjects`' reply.
    static let managedObjectsSignature: DBusSignature = "a{oa{sa{sv}}}"

    /// The adapter's name (`hci0`) for its object path (`/org/bluez/hci0`); nil for any other path.
    static func adapterName(of path: DBusObjectPath) -> String? {
        let parts = path.rawValue.split(separator: "/")
        guard parts.count == 3, parts[0] == "org", parts[1] == "bluez" else { return nil }
        return String(parts[2])
    }

    /// The object path of an adapter, e.g. `/org/bluez/hci0`.
    /// - Throws: `PeripheralError` `noAdapter` when the name cannot be a path element.
    static func adapterPath(_ name: String) throws -> DBusObjectPath {
        do {
            return try DBusObjectPath("/org/bluez").appending(name)
        } catch {
            throw PeripheralError(.noAdapter, "\"\(name)\" is not an adapter name (expected e.g. hci0)")
        }
    }

    /// A characteristic's `Flags` as gatt-database.c reads them: each operation its flags allow,
    /// with the security it needs (`encrypt-read`, `encrypt-authenticated-write`,
    /// `secure-notify`, … since 5.x; 5.66 and 5.82 both know every one). BlueZ has no secured
    /// write-without-response: such a characteristic keeps `write-without-response` and gets
    /// the secured `write` beside it, which sets the attribute's permission (and also offers
    /// writes with a response).
    static func flags(of characteristic: GATTCharacteristic) -> [String] {
        let prefix = switch characteristic.security {
        case .none: ""
        case .encrypted: "encrypt-"
        case .authenticated: "encrypt-authenticated-"
        case .secure: "secure-"
        }
        guard !prefix.isEmpty else { return characteristic.flags.sorted().map(\.rawValue) }
        var flags: Set<String> = []
        for flag in characteristic.flags {
            switch flag {
            case .read: flags.insert(prefix + "read")
            case .write: flags.insert(prefix + "write")
            case .writeWithoutResponse: flags.formUnion([flag.rawValue, prefix + "write"])
            case .notify: flags.insert(prefix + "notify")
            case .indicate: flags.insert(prefix + "indicate")
            }
        }
        return flags.sorted()
    }
}
