/// The little-endian bytes of the low `count` bytes of `value`, as BTHome objects, its counter
/// and GATT's integer formats go on air.
func littleEndian(_ value: UInt64, count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
}

/// 2 to the power `exponent` (0 or more), exactly, without Foundation.
func power(of2 exponent: Int) -> Double {
    (0..<exponent).reduce(1.0) { value, _ in value * 2 }
}

/// 10 to the power `exponent` (0 or more), without Foundation.
func power(of10 exponent: Int) -> Double {
    (0..<exponent).reduce(1.0) { value, _ in value * 10 }
}
