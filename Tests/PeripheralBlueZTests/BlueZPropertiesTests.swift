import DBus
import Peripheral
import PeripheralBlueZ
import Testing

@Suite("LEAdvertisement1 properties as BlueZ parses them")
struct BlueZPropertiesTests {
    static let everything = Advertisement(
        kind: .peripheral, serviceUUIDs: [BluetoothUUID(0x180D)], solicitUUIDs: [BluetoothUUID(0x1812)],
        manufacturerData: [.init(companyID: 0xFFFF, data: [1, 2])], serviceData: [.init(uuid: BluetoothUUID(0x9999), data: [3])],
        data: [.init(type: 0x26, data: [4])], discoverable: true, discoverableTimeout: 10, includes: [.txPower, .appearance],
        localName: "Thermo-1", appearance: nil, duration: 2, timeout: 60, secondaryChannel: .coded,
        minInterval: 100, maxInterval: 200, txPower: -4)

    @Test("every property has the signature BlueZ 5.66 expects", arguments: [
        ("Type", "s"), ("ServiceUUIDs", "as"), ("SolicitUUIDs", "as"), ("ManufacturerData", "a{qv}"),
        ("ServiceData", "a{sv}"), ("Data", "a{yv}"), ("Discoverable", "b"), ("DiscoverableTimeout", "q"),
        ("Includes", "as"), ("LocalName", "s"), ("Duration", "q"), ("Timeout", "q"), ("SecondaryChannel", "s"),
        ("MinInterval", "u"), ("MaxInterval", "u"), ("TxPower", "n"),
    ])
    func signatures(name: String, signature: String) {
        let properties = Self.everything.bluezProperties

        #expect(properties[name]?.type.signature == signature)
    }

    @Test("Appearance is a q")
    func appearance() {
        #expect(Advertisement(appearance: 0x0341).bluezProperties["Appearance"] == .uint16(0x0341))
    }

    @Test("only the properties that are set are exported; Type always is")
    func onlySetProperties() {
        let properties = Advertisement(kind: .broadcast).bluezProperties

        #expect(properties == ["Type": .string("broadcast")])
    }

    @Test("values carry the advertisement's data: full UUID strings, bytes in variants, include names")
    func values() {
        let properties = Self.everything.bluezProperties

        #expect(properties["ServiceUUIDs"] == .strings(["0000180d-0000-1000-8000-00805f9b34fb"]))
        #expect(properties["ManufacturerData"]?.dictionaryEntries == [DBusDictEntry(.uint16(0xFFFF), .variant(.bytes([1, 2])))])
        #expect(properties["ServiceData"]?.dictionaryEntries
            == [DBusDictEntry(.string("00009999-0000-1000-8000-00805f9b34fb"), .variant(.bytes([3])))])
        #expect(properties["Includes"] == .strings(["appearance", "tx-power"]))
        #expect(properties["SecondaryChannel"] == .string("Coded"))
    }

    @Test("every property value is valid to send")
    func valid() throws {
        for value in Self.everything.bluezProperties.values {
            try value.validate()
        }
    }
}

@Suite("BlueZ's errors translated")
struct BlueZErrorTests {
    @Test("each BlueZ and bus error maps to its code", arguments: [
        ("org.bluez.Error.NotPermitted", "Maximum advertisements reached", PeripheralError.Code.noFreeInstance),
        ("org.bluez.Error.Failed", "Failed to parse advertisement.", .rejected),
        ("org.bluez.Error.Failed", "Failed to register advertisement", .failed),
        ("org.bluez.Error.AlreadyExists", "Already Exists", .alreadyRegistered),
        ("org.bluez.Error.DoesNotExist", "Does Not Exist", .notRegistered),
        ("org.bluez.Error.InvalidArguments", "Invalid arguments in method call", .rejected),
        ("org.freedesktop.DBus.Error.NoReply", "Did not receive a reply", .timeout),
        ("org.freedesktop.DBus.Error.NoReply", "Message recipient disconnected from message bus without replying", .bluezUnavailable),
        ("org.bluez.Error.Busy", "In Progress", .failed),
        ("org.freedesktop.DBus.Error.ServiceUnknown", "The name org.bluez was not provided", .bluezUnavailable),
        ("org.freedesktop.DBus.Error.AccessDenied", "Rejected send message", .accessDenied),
        ("org.freedesktop.DBus.Error.UnknownObject", "Method \"RegisterAdvertisement\" doesn't exist", .noAdapter),
    ])
    func mapping(name: String, message: String, code: PeripheralError.Code) {
        let error = PeripheralError(bluez: DBusError(DBusError.Name(rawValue: name), message))

        #expect(error.code == code)
        #expect(error.message.hasSuffix("(BlueZ: \(message))"))
    }

    @Test("Busy when powering an adapter on means BlueZ is changing its power already")
    func busyPoweringOn() {
        let error = PeripheralError(bluez: DBusError("org.bluez.Error.Busy", ""), about: .adapter)

        #expect(error == PeripheralError(.notPowered, "the adapter is being powered on or off already; waiting for it"))
    }

    @Test("an error name nobody mapped keeps its name")
    func unknownName() {
        let error = PeripheralError(bluez: DBusError("org.bluez.Error.Brand.New", "something"))

        #expect(error == PeripheralError(.unknown, "org.bluez.Error.Brand.New: something"))
    }

    @Test("'Maximum advertisements reached' is worth retrying, a parse failure is not")
    func transience() {
        #expect(PeripheralError(bluez: DBusError("org.bluez.Error.NotPermitted", "Maximum advertisements reached")).isTransient)
        #expect(!PeripheralError(bluez: DBusError("org.bluez.Error.Failed", "Failed to parse advertisement.")).isTransient)
    }

    @Test("the TX power range comes from BlueZ's SupportedCapabilities")
    func txPowerRangeFromBlueZ() {
        let manager: [String: DBusValue] = [
            "SupportedCapabilities": .variantDictionary(["MinTxPower": .int16(-34), "MaxTxPower": .int16(7), "MaxAdvLen": .byte(251)]),
        ]

        let capabilities = AdapterCapabilities(name: "hci0", adapter: [:], advertisingManager: manager)

        #expect(capabilities.txPowerRange == -34...7)
        #expect(capabilities.maxAdvertisingLength == 251)
    }

    @Test("BlueZ acts on intervals and TX power exactly where it shows SupportedCapabilities (5.77+, or -E)",
          arguments: [(true, true), (false, false)])
    func parametersActedOnWhereCapabilitiesAreShown(shown: Bool, actsOn: Bool) {
        let manager: [String: DBusValue] = shown ? ["SupportedCapabilities": .variantDictionary(["MaxAdvLen": .byte(31)])] : [:]

        let capabilities = AdapterCapabilities(name: "hci0", adapter: [:], advertisingManager: manager)

        #expect(capabilities.actsOnParameters == actsOn)
    }
}
