import FuzzDriver
import Peripheral

/// libFuzzer's entry: any bytes as a central's write to a characteristic of a format drawn
/// from the first bytes (layout, exponent, range, maximum length). Decoding must not crash or
/// trap; a value it takes must encode back to the same bytes (what a later read returns), and
/// a value it refuses must be refused for a reason a central gets as an ATT error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGATTValue(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = ByteReader(data, size)
    let kinds = GATTFormat.Kind.allCases
    var format = GATTFormat(kinds[Int(input.byte()) % kinds.count], exponent: Int(Int8(bitPattern: input.byte())) % 11)
    if format.kind == .float32 { format.exponent = 0 }
    if input.flag() {
        let low = Double(Int16(bitPattern: input.uint16())), high = Double(Int16(bitPattern: input.uint16()))
        format.range = min(low, high)...max(low, high)
    }
    if input.flag() { format.maximumLength = Int(input.uint16()) % (GATTFormat.attributeLimit + 1) }
    let written = input.bytes()

    let value: GATTValue
    do {
        value = try format.decode(written)
    } catch {
        guard !error.message.isEmpty else { fatalError("a refusal without a reason") }
        return 0
    }
    let encoded: [UInt8]
    do {
        encoded = try format.encode(value)
    } catch {
        fatalError("\(format) decoded \(written) as \(value), which it cannot encode: \(error)")
    }
    // A float's NaN payload and -0 are normalised; every other taken value reads back as written.
    if format.kind != .float32 && format.exponent == 0, encoded != written {
        fatalError("\(format) took \(written) as \(value) but encodes it as \(encoded)")
    }
    return 0
}

/// The program's entry: SwiftPM names an executable target's entry `<target>_main`.
@_cdecl("fuzz_gatt_value_main")
public func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    fuzzMain(argc, argv, fuzzGATTValue)
}
