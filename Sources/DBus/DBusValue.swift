import Glibc

/// A value of any D-Bus type, nested to any depth the specification allows.
///
/// Containers carry their element types, so an empty array still has a signature. A value is
/// checked with ``validate()`` before it is marshalled: a NUL in a string, an array element of
/// the wrong type or nesting beyond the limits is reported as an error instead of reaching
/// libdbus, which would abort the process.
public indirect enum DBusValue: Hashable, Sendable {
    /// `y`
    case byte(UInt8)
    /// `b`
    case boolean(Bool)
    /// `n`
    case int16(Int16)
    /// `q`
    case uint16(UInt16)
    /// `i`
    case int32(Int32)
    /// `u`
    case uint32(UInt32)
    /// `x`
    case int64(Int64)
    /// `t`
    case uint64(UInt64)
    /// `d`
    case double(Double)
    /// `s`
    case string(String)
    /// `o`
    case objectPath(DBusObjectPath)
    /// `g`
    case signature(DBusSignature)
    /// `h`: an open file descriptor. Sent, the receiver gets a descriptor of its own (libdbus
    /// duplicates it); received, it is the reader's, closed when the last value holding it goes.
    case unixFD(DBusFileDescriptor)
    /// `aT`: the element type and the elements, all of that type.
    case array(DBusType, [DBusValue])
    /// `a{KV}`: the key and value types and the entries, in order.
    case dictionary(key: DBusType, value: DBusType, [DBusDictEntry])
    /// `(...)`: one or more fields.
    case structure([DBusValue])
    /// `v`: a value that carries its own type.
    case variant(DBusValue)

    /// The D-Bus type of this value.
    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }

    /// Checks that this value can be marshalled: its type is a valid signature, every element
    /// matches its container's declared type, no string holds a NUL, and containers (variants
    /// included) nest no deeper than the specification's 64 levels.
    /// - Throws: ``DBusError`` (`InvalidArgs`) naming the offending part.
    public func validate() throws(DBusError) {
        try type.validate()
        try check(depth: 0)
    }

    /// The deepest container nesting a message may have (arrays, structures and variants).
    static let maximumContainerDepth = 64

    private func check(depth: Int) throws(DBusError) {
        switch self {
        case .string(let text):
            // Where, not what: the string may be a secret (a Wi-Fi password), and errors are logged.
            if let at = text.utf8.firstIndex(of: 0) {
                throw .invalidArgs("a string holds a NUL character (at byte \(text.utf8.distance(from: text.utf8.startIndex, to: at))), which D-Bus does not allow")
            }
        case .array(let element, let items):
            try enter(depth)
            for item in items {
                guard item.type == element else {
                    throw .invalidArgs("array of '\(element.signature)' holds an element of type '\(item.type.signature)'")
                }
                try item.check(depth: depth + 1)
            }
        case .dictionary(let key, let value, let entries):
            try enter(depth)
            for entry in entries {
                guard entry.key.type == key, entry.value.type == value else {
                    throw .invalidArgs(
                        "dictionary 'a{\(key.signature)\(value.signature)}' holds an entry of types "
                            + "'\(entry.key.type.signature)' and '\(entry.value.type.signature)'")
                }
                try entry.key.check(depth: depth + 2)
                try entry.value.check(depth: depth + 2)
            }
        case .structure(let fields):
            try enter(depth)
            for field in fields { try field.check(depth: depth + 1) }
        case .variant(let inner):
            try enter(depth)
            try inner.type.validate()
            try inner.check(depth: depth + 1)
        default:
            break
        }
    }

    private func enter(_ depth: Int) throws(DBusError) {
        guard depth < DBusValue.maximumContainerDepth else {
            throw .invalidArgs("value nests containers deeper than \(DBusValue.maximumContainerDepth) levels")
        }
    }
}

/// One entry of a D-Bus dictionary.
public struct DBusDictEntry: Hashable, Sendable {
    /// The key, of a basic type.
    public var key: DBusValue
    /// The value.
    public var value: DBusValue

    /// An entry.
    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// An open file descriptor that a ``DBusValue`` carries (`h`), closed when the last reference to
/// it goes: one read from a message can leak nothing, whoever sent it.
public final class DBusFileDescriptor: Hashable, Sendable {
    /// The descriptor, open as long as this object lives.
    public let fd: Int32

    /// Takes `fd` over: it is closed when this object goes.
    public init(owning fd: Int32) {
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// The same object: two descriptors of one file are two values.
    public static func == (lhs: DBusFileDescriptor, rhs: DBusFileDescriptor) -> Bool { lhs === rhs }
    /// Hashes the object's identity, as `==` compares it.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
