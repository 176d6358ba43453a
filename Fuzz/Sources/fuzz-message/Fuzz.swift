import DBus
import FuzzDriver
import Glibc

/// libFuzzer's entry: any bytes as a D-Bus message off the wire. What libdbus accepts must be
/// read into DBusMessage without a crash or trap, and what we read, written back and read
/// again, must write the same bytes. Read again against a small value budget (as a call to an
/// exported object is, with a smaller one), it is either refused whole as over the budget or
/// read exactly the same: a budget only refuses.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMessage(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let message = try? DBusMessage(wireBytes: bytes) else { return 0 }
    do throws(DBusError) {
        let budgeted = try DBusMessage(wireBytes: bytes, maximumValues: 16)
        guard (try? budgeted.wireBytes()) == (try? message.wireBytes()) else {
            fatalError("a value budget changed what was read:\n\(message)\n\(budgeted)")
        }
    } catch {
        guard error.name == .limitsExceeded else { fatalError("read with no budget, refused with one for another reason: \(error)") }
    }
    // Writing may refuse what libdbus let through (we are stricter); it must not crash.
    guard let written = try? message.wireBytes() else { return 0 }
    guard let again = try? DBusMessage(wireBytes: written) else {
        fatalError("libdbus refuses the bytes we wrote for a message it gave us: \(message)")
    }
    // Compared as bytes: a double may be NaN, which is not equal to itself.
    guard (try? again.wireBytes()) == written else { fatalError("a round trip changed the message:\n\(message)\n\(again)") }
    return 0
}

/// Messages of the kinds bleadvd exchanges with BlueZ and its clients, as seeds: libdbus is not
/// instrumented, so libFuzzer cannot find a valid header from nothing.
func seeds() -> [DBusMessage] {
    let properties = DBusValue.variantDictionary([
        "Type": .string("peripheral"), "ServiceUUIDs": .strings(["180d", "0000fcd2-0000-1000-8000-00805f9b34fb"]),
        "ManufacturerData": .dictionary(key: .uint16, value: .variant, [DBusDictEntry(.uint16(0xFFFF), .variant(.bytes([1, 2, 3])))]),
        "LocalName": .string("Thermo-1"), "Includes": .strings(["tx-power"]), "Discoverable": .boolean(true),
        "MinInterval": .variant(.uint32(100)), "TxPower": .int16(-4), "Timeout": .uint16(0),
    ])
    let interfaces = DBusValue.dictionary(key: .string, value: .dictionary(key: .string, value: .variant), [
        DBusDictEntry(.string("org.bluez.LEAdvertisingManager1"), .variantDictionary(["ActiveInstances": .byte(1), "SupportedInstances": .byte(3)])),
        DBusDictEntry(.string("org.bluez.Adapter1"), .variantDictionary(["Address": .string("00:AA:01:00:00:00"), "Powered": .boolean(true)])),
    ])
    return [
        .methodCall(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.LEAdvertisingManager1",
                    member: "RegisterAdvertisement", body: [.objectPath("/org/bleadvd/advertisement/1"), properties]),
        .signal(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                body: [.objectPath("/org/bluez/hci0"), interfaces]),
        .signal(path: "/org/bluez/hci0", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                body: [.string("org.bluez.Adapter1"), .variantDictionary(["Powered": .boolean(false)]), .strings([])]),
        .methodCall(destination: "org.bleadvd.Advertiser", path: "/org/bleadvd/Advertiser", interface: "org.bleadvd.Advertiser1",
                    member: "Set", body: [.string("kitchen"), .variantDictionary(["temperature": .double(21.5), "battery": .int64(87)])]),
        .methodCall(destination: nil, path: "/", interface: nil, member: "Ping",
                    body: [.structure([.int32(-1), .uint64(1 << 40), .signature(DBusSignature(types: [.string])), .variant(.array(.byte, []))])]),
    ]
}

/// The program's entry: SwiftPM names an executable target's entry `<target>_main`. With
/// FUZZ_WRITE_SEEDS=FOLDER it writes the seeds there instead of fuzzing.
@_cdecl("fuzz_message_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    if let folder = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) {
        for (index, message) in seeds().enumerated() {
            let bytes = try! message.wireBytes()
            guard let file = fopen("\(folder)/seed-\(index)", "wb") else { return 1 }
            fwrite(bytes, 1, bytes.count, file)
            fclose(file)
        }
        return 0
    }
    return fuzzMain(argc, argv, fuzzMessage)
}
