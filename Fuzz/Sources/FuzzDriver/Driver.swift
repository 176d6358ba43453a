/// libFuzzer's driver, from its runtime (linked by -sanitize=fuzzer).
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

/// Runs libFuzzer with the program's arguments on `target`, which gets each input's bytes.
public func fuzzMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ target: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments, target)
}

/// Reads an input's bytes front to back, as the values a target builds from them; past the
/// end every read is zero or empty, so any input makes a value.
public struct ByteReader {
    var remaining: ArraySlice<UInt8>

    public init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        remaining = Array(UnsafeBufferPointer(start: data, count: size))[...]
    }

    public mutating func byte() -> UInt8 { remaining.popFirst() ?? 0 }

    public mutating func uint16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    public mutating func uint32() -> UInt32 { UInt32(uint16()) | UInt32(uint16()) << 16 }

    /// A length-prefixed run of bytes (the prefix is one byte, so at most 255).
    public mutating func bytes() -> [UInt8] {
        let count = min(Int(byte()), remaining.count)
        defer { remaining = remaining.dropFirst(count) }
        return Array(remaining.prefix(count))
    }

    /// Whether the next byte is odd.
    public mutating func flag() -> Bool { byte() & 1 == 1 }
}
