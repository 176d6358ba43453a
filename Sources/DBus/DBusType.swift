/// The type of a D-Bus value: one *single complete type* of the D-Bus type system.
///
/// Every value that crosses the bus has one of these types; its textual form is the signature
/// code (`"s"`, `"a{sv}"`, `"(iu)"`, ...). Parse one from text with ``DBusSignature``.
public indirect enum DBusType: Hashable, Sendable {
    /// `y`: an unsigned 8-bit integer.
    case byte
    /// `b`: a boolean.
    case boolean
    /// `n`: a signed 16-bit integer.
    case int16
    /// `q`: an unsigned 16-bit integer.
    case uint16
    /// `i`: a signed 32-bit integer.
    case int32
    /// `u`: an unsigned 32-bit integer.
    case uint32
    /// `x`: a signed 64-bit integer.
    case int64
    /// `t`: an unsigned 64-bit integer.
    case uint64
    /// `d`: an IEEE 754 double.
    case double
    /// `s`: a UTF-8 string without NUL characters.
    case string
    /// `o`: an object path.
    case objectPath
    /// `g`: a type signature.
    case signature
    /// `h`: a Unix file descriptor, passed over the bus's socket.
    case unixFD
    /// `v`: a variant, a value that carries its own type.
    case variant
    /// `aT`: an array of one element type.
    case array(DBusType)
    /// `a{KV}`: a dictionary; the key is a basic type.
    case dictionary(key: DBusType, value: DBusType)
    /// `(T...)`: a structure of one or more fields.
    case structure([DBusType])

    /// The signature text of this type, e.g. `a{sv}`.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.signature
        case .dictionary(let key, let value): "a{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// Whether this is a basic type, the only kind allowed as a dictionary key.
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: false
        default: true
        }
    }

    /// Checks the rules a signature parse enforces, without building the text: basic
    /// dictionary keys, no empty structure, at most 32 nested arrays and 32 nested structures,
    /// and a signature of at most 255 bytes.
    /// - Throws: ``DBusError`` (`InvalidSignature`), as parsing the signature would.
    public func validate() throws(DBusError) {
        var length = 0
        try check(arrays: 0, structures: 0, length: &length)
        guard length <= DBusSignature.maximumLength else {
            throw DBusError(.invalidSignature, "type '\(signature)' is \(length) bytes long; the limit is 255")
        }
    }

    private func check(arrays: Int, structures: Int, length: inout Int) throws(DBusError) {
        length += 1
        switch self {
        case .array(let element):
            guard arrays < DBusSignature.maximumDepth else { throw depthError("arrays") }
            try element.check(arrays: arrays + 1, structures: structures, length: &length)
        case .dictionary(let key, let value):
            guard arrays < DBusSignature.maximumDepth else { throw depthError("arrays") }
            guard key.isBasic else {
                throw DBusError(.invalidSignature, "type '\(signature)' has a dictionary key of type '\(key.signature)'; keys must be basic types")
            }
            length += 2
            try key.check(arrays: arrays + 1, structures: structures, length: &length)
            try value.check(arrays: arrays + 1, structures: structures, length: &length)
        case .structure(let fields):
            guard structures < DBusSignature.maximumDepth else { throw depthError("structures") }
            guard !fields.isEmpty else { throw DBusError(.invalidSignature, "type '\(signature)' has an empty structure '()'") }
            length += 1
            for field in fields { try field.check(arrays: arrays, structures: structures + 1, length: &length) }
        default:
            break
        }
    }

    private func depthError(_ what: String) -> DBusError {
        DBusError(.invalidSignature, "type nests \(what) deeper than \(DBusSignature.maximumDepth)")
    }

    /// The type code libdbus uses for this type (the first character of its signature).
    var code: Int32 {
        switch self {
        case .byte: DBusTypeCode.byte
        case .boolean: DBusTypeCode.boolean
        case .int16: DBusTypeCode.int16
        case .uint16: DBusTypeCode.uint16
        case .int32: DBusTypeCode.int32
        case .uint32: DBusTypeCode.uint32
        case .int64: DBusTypeCode.int64
        case .uint64: DBusTypeCode.uint64
        case .double: DBusTypeCode.double
        case .string: DBusTypeCode.string
        case .objectPath: DBusTypeCode.objectPath
        case .signature: DBusTypeCode.signature
        case .unixFD: DBusTypeCode.unixFD
        case .variant: DBusTypeCode.variant
        case .array, .dictionary: DBusTypeCode.array
        case .structure: DBusTypeCode.structure
        }
    }
}

extension DBusType: CustomStringConvertible {
    /// The signature text, e.g. `a{sv}`.
    public var description: String { signature }
}

/// The `DBUS_TYPE_*` codes. libdbus defines them as `((int) 's')` macros, which Swift cannot
/// import, so they are spelled out here.
enum DBusTypeCode {
    static let invalid: Int32 = 0
    static let byte = Int32(UInt8(ascii: "y"))
    static let boolean = Int32(UInt8(ascii: "b"))
    static let int16 = Int32(UInt8(ascii: "n"))
    static let uint16 = Int32(UInt8(ascii: "q"))
    static let int32 = Int32(UInt8(ascii: "i"))
    static let uint32 = Int32(UInt8(ascii: "u"))
    static let int64 = Int32(UInt8(ascii: "x"))
    static let uint64 = Int32(UInt8(ascii: "t"))
    static let double = Int32(UInt8(ascii: "d"))
    static let string = Int32(UInt8(ascii: "s"))
    static let objectPath = Int32(UInt8(ascii: "o"))
    static let signature = Int32(UInt8(ascii: "g"))
    static let unixFD = Int32(UInt8(ascii: "h"))
    static let variant = Int32(UInt8(ascii: "v"))
    static let array = Int32(UInt8(ascii: "a"))
    static let structure = Int32(UInt8(ascii: "r"))
    static let dictEntry = Int32(UInt8(ascii: "e"))
}
