/// A Bluetooth UUID: 16-, 32- or 128-bit. UUIDs on the Bluetooth base
/// (`0000xxxx-0000-1000-8000-00805F9B34FB`) are kept in their shortest form, which is how they
/// go on air.
public struct BluetoothUUID: Hashable, Sendable {
    /// The full 128-bit value, most significant byte first.
    public let bytes: [UInt8]

    /// How many bits the UUID takes on air.
    public enum Size: Int, Sendable, Comparable {
        /// A 16-bit UUID on the base UUID: 2 bytes on air.
        case bits16 = 16
        /// A 32-bit UUID on the base UUID: 4 bytes on air.
        case bits32 = 32
        /// Any other UUID: 16 bytes on air.
        case bits128 = 128

        /// Orders sizes from smallest to largest.
        public static func < (lhs: Size, rhs: Size) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    static let base: [UInt8] = [0, 0, 0, 0, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]

    /// A 16-bit UUID such as 0x180D (Heart Rate).
    public init(_ short: UInt16) {
        self.init(shortValue: UInt32(short))
    }

    /// A 32-bit UUID on the base UUID.
    public init(shortValue: UInt32) {
        var bytes = Self.base
        bytes[0] = UInt8(shortValue >> 24)
        bytes[1] = UInt8(shortValue >> 16 & 0xFF)
        bytes[2] = UInt8(shortValue >> 8 & 0xFF)
        bytes[3] = UInt8(shortValue & 0xFF)
        self.init(unchecked: bytes)
    }

    /// A UUID from its 16 bytes, most significant first.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.init(unchecked: bytes)
    }

    private init(unchecked bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses `180D`, `0x180D`, `0000180d` (32-bit) or `6e400001-b5a3-f393-e0a9-e50e24dcca9e`.
    /// - Throws: ``PeripheralError`` (`invalidValue`) saying what the text should look like.
    public init(_ text: String) throws(PeripheralError) {
        var hex = Substring(text)
        if hex.hasPrefix("0x") || hex.hasPrefix("0X") { hex = hex.dropFirst(2) }
        let digits = hex.filter { $0 != "-" }
        // Dashes only where the 36-character form has them.
        let dashesOK = !hex.contains("-")
            || hex.split(separator: "-", omittingEmptySubsequences: false).map(\.count) == [8, 4, 4, 4, 12]
        guard dashesOK, [4, 8, 32].contains(digits.count), digits.allSatisfy(\.isHexDigit),
              let parsed = Hex.decode(String(digits)) else {
            throw PeripheralError(
                .invalidValue,
                "\"\(text)\" is not a Bluetooth UUID; use 4 hex digits (180D), 8 (0000180D) or a full UUID "
                    + "(6e400001-b5a3-f393-e0a9-e50e24dcca9e)")
        }
        switch parsed.count {
        case 2: self.init(UInt16(parsed[0]) << 8 | UInt16(parsed[1]))
        case 4: self.init(shortValue: parsed.reduce(0) { $0 << 8 | UInt32($1) })
        default: self.init(unchecked: parsed)
        }
    }

    /// The size this UUID takes on air.
    public var size: Size {
        guard Array(bytes[4...]) == Array(Self.base[4...]) else { return .bits128 }
        return bytes[0] == 0 && bytes[1] == 0 ? .bits16 : .bits32
    }

    /// The bytes that go on air: 2, 4 or 16, least significant first.
    public var airBytes: [UInt8] {
        switch size {
        case .bits16: [bytes[3], bytes[2]]
        case .bits32: [bytes[3], bytes[2], bytes[1], bytes[0]]
        case .bits128: bytes.reversed()
        }
    }

    /// The canonical lowercase form, `0000180d-0000-1000-8000-00805f9b34fb`, which BlueZ and
    /// scanners report.
    public var uuidString: String {
        let hex = Hex.encode(bytes)
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex.dropFirst(range.lowerBound).prefix(range.count))
        }
        return parts.joined(separator: "-")
    }

    /// The short form people write: `180d` for 16-bit, `0000180d` for 32-bit, else the full UUID.
    public var shortString: String {
        switch size {
        case .bits16: Hex.encode(Array(bytes[2...3]))
        case .bits32: Hex.encode(Array(bytes[0...3]))
        case .bits128: uuidString
        }
    }
}

extension BluetoothUUID: CustomStringConvertible {
    /// The short form: `180d`, or the full UUID.
    public var description: String { shortString }
}

/// Hex text ⇄ bytes.
public enum Hex {
    /// Lowercase hex, two digits a byte.
    public static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes from hex text (either case, an even number of digits); nil when it is not hex.
    /// Spaces and colons between bytes are allowed: `01 02`, `01:02`.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = text.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: ":") }
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
