import FuzzDriver
import Peripheral

/// libFuzzer's entry: any bytes as an advertisement (every field drawn from them) and the
/// adapter it would go on. Validation and the AD encoder must not crash or trap; and an
/// advertisement validation accepts must encode to what a controller takes: each AD
/// structure's length byte right, at most 31 bytes of scan response and of advertising data (the
/// adapter's MaxAdvLen with a secondary channel, 251 when no adapter is given).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAdvertisement(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = ByteReader(data, size)
    var ad = Advertisement(kind: input.flag() ? .broadcast : .peripheral)
    for _ in 0..<Int(input.byte() % 4) { ad.serviceUUIDs.append(uuid(&input)) }
    for _ in 0..<Int(input.byte() % 3) { ad.solicitUUIDs.append(uuid(&input)) }
    for _ in 0..<Int(input.byte() % 3) { ad.manufacturerData.append(.init(companyID: input.uint16(), data: input.bytes())) }
    for _ in 0..<Int(input.byte() % 3) { ad.serviceData.append(.init(uuid: uuid(&input), data: input.bytes())) }
    for _ in 0..<Int(input.byte() % 3) { ad.data.append(.init(type: input.byte(), data: input.bytes())) }
    for _ in 0..<Int(input.byte() % 2) { ad.scanResponse.serviceUUIDs.append(uuid(&input)) }
    for _ in 0..<Int(input.byte() % 2) { ad.scanResponse.manufacturerData.append(.init(companyID: input.uint16(), data: input.bytes())) }
    for _ in 0..<Int(input.byte() % 2) { ad.scanResponse.serviceData.append(.init(uuid: uuid(&input), data: input.bytes())) }
    for _ in 0..<Int(input.byte() % 2) { ad.scanResponse.data.append(.init(type: input.byte(), data: input.bytes())) }
    if input.flag() { ad.discoverable = input.flag() }
    if input.flag() { ad.discoverableTimeout = input.uint16() }
    for include in Advertisement.Include.allCases where input.flag() { ad.includes.insert(include) }
    if input.flag() { ad.localName = String(decoding: input.bytes(), as: UTF8.self) }
    if input.flag() { ad.appearance = input.uint16() }
    if input.flag() { ad.duration = input.uint16() }
    if input.flag() { ad.timeout = input.uint16() }
    if input.flag() { ad.secondaryChannel = Advertisement.SecondaryChannel.allCases[Int(input.byte()) % Advertisement.SecondaryChannel.allCases.count] }
    if input.flag() { ad.minInterval = input.uint32() }
    if input.flag() { ad.maxInterval = input.uint32() }
    if input.flag() { ad.txPower = Int16(bitPattern: input.uint16()) }
    let adapter = AdapterCapabilities(
        name: "hci0", includes: Set(Advertisement.Include.allCases.filter { _ in input.flag() }),
        secondaryChannels: Set(Advertisement.SecondaryChannel.allCases.filter { _ in input.flag() }),
        maxAdvertisingLength: input.flag() ? 31 : Int(input.byte()),
        release: [StackRelease.before571, .longData, .scanResponseFields][Int(input.byte()) % 3])
    let chosen = input.flag() ? adapter : nil

    let problems = ad.problems(for: chosen)
    let payload = AdvertisingPayload(
        for: ad, adapterName: String(decoding: input.bytes(), as: UTF8.self), adapterAppearance: input.uint16(),
        adapterTxPower: Int8(bitPattern: input.byte()))

    guard problems.isEmpty else { return 0 }
    for structure in payload.advertisingData + payload.scanResponse where structure.data.count > 254 {
        fatalError("valid, but \(structure.field) has \(structure.data.count) bytes: its length byte wraps")
    }
    guard payload.advertisingSize <= ad.advertisingLimit(on: chosen).bytes else {
        fatalError("valid, but the advertising data is \(payload.advertisingSize) bytes: \(ad)")
    }
    guard payload.scanResponseSize <= AdvertisingPayload.limit else {
        fatalError("valid, but the scan response is \(payload.scanResponseSize) bytes: \(ad)")
    }
    return 0
}

/// A 16-, 32- or 128-bit UUID, as the next byte chooses.
func uuid(_ input: inout ByteReader) -> BluetoothUUID {
    switch input.byte() % 3 {
    case 0: BluetoothUUID(input.uint16())
    case 1: BluetoothUUID(shortValue: input.uint32())
    default: BluetoothUUID(bytes: (0..<16).map { _ in input.byte() })!
    }
}

/// The program's entry: SwiftPM names an executable target's entry `<target>_main`.
@_cdecl("fuzz_advertisement_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, fuzzAdvertisement)
}
