/// A validated D-Bus signature: a sequence of zero or more complete types, such as a message
/// body's `sa{sv}`.
///
/// Parsing enforces every rule of the D-Bus specification (at most 255 bytes, at most 32 nested
/// arrays and 32 nested structures, basic dictionary keys, no empty structures), so a signature
/// that reaches libdbus can never make it abort.
public struct DBusSignature: Hashable, Sendable {
    /// The complete types, in order.
    public let types: [DBusType]

    /// The signature text, e.g. `sa{sv}`.
    public var text: String { types.map(\.signature).joined() }

    /// The empty signature (a message with no arguments).
    public static let empty = DBusSignature(types: [])

    /// A signature made of the given types.
    public init(types: [DBusType]) {
        self.types = types
    }

    /// Parses signature text.
    /// - Throws: ``DBusError`` named `org.freedesktop.DBus.Error.InvalidSignature`, saying where
    ///   and why the text is not a valid signature.
    public init(_ text: String) throws(DBusError) {
        var parser = Parser(text: text)
        types = try parser.parseAll()
    }
}

extension DBusSignature: CustomStringConvertible, ExpressibleByStringLiteral {
    /// The signature text.
    public var description: String { text }

    /// A signature written as a literal in source code. A malformed literal is a programming
    /// error and stops the program, like an out-of-range array index.
    public init(stringLiteral value: String) {
        do {
            try self.init(value)
        } catch {
            preconditionFailure("invalid signature literal: \(error.message)")
        }
    }
}

extension DBusSignature {
    /// The longest signature the specification allows, in bytes.
    static let maximumLength = 255
    /// The deepest nesting of arrays (and, separately, of structures) the specification allows.
    static let maximumDepth = 32

    private struct Parser {
        let bytes: [UInt8]
        let text: String
        var index = 0
        var arrayDepth = 0
        var structDepth = 0

        init(text: String) {
            self.text = text
            self.bytes = Array(text.utf8)
        }

        mutating func parseAll() throws(DBusError) -> [DBusType] {
            guard bytes.count <= DBusSignature.maximumLength else {
                throw fail("is \(bytes.count) bytes long; the limit is \(DBusSignature.maximumLength)")
            }
            var types: [DBusType] = []
            while index < bytes.count {
                types.append(try parseOne())
            }
            return types
        }

        private mutating func parseOne() throws(DBusError) -> DBusType {
            guard index < bytes.count else { throw fail("ends where a type was expected") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "y"): return .byte
            case UInt8(ascii: "b"): return .boolean
            case UInt8(ascii: "n"): return .int16
            case UInt8(ascii: "q"): return .uint16
            case UInt8(ascii: "i"): return .int32
            case UInt8(ascii: "u"): return .uint32
            case UInt8(ascii: "x"): return .int64
            case UInt8(ascii: "t"): return .uint64
            case UInt8(ascii: "d"): return .double
            case UInt8(ascii: "s"): return .string
            case UInt8(ascii: "o"): return .objectPath
            case UInt8(ascii: "g"): return .signature
            case UInt8(ascii: "v"): return .variant
            case UInt8(ascii: "a"): return try parseArray()
            case UInt8(ascii: "("): return try parseStructure()
            case UInt8(ascii: "h"): return .unixFD
            default:
                throw fail("has '\(Character(Unicode.Scalar(byte)))', which is not a type code", at: index - 1)
            }
        }

        private mutating func parseArray() throws(DBusError) -> DBusType {
            arrayDepth += 1
            defer { arrayDepth -= 1 }
            guard arrayDepth <= DBusSignature.maximumDepth else {
                throw fail("nests arrays deeper than \(DBusSignature.maximumDepth)", at: index - 1)
            }
            guard index < bytes.count else { throw fail("ends after 'a' without an element type") }
            guard bytes[index] == UInt8(ascii: "{") else { return .array(try parseOne()) }
            index += 1
            let keyStart = index
            let key = try parseOne()
            guard key.isBasic else {
                throw fail("has a dictionary key of type '\(key.signature)'; keys must be basic types", at: keyStart)
            }
            let value = try parseOne()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
                throw fail("has a dictionary entry that is not exactly one key and one value", at: index)
            }
            index += 1
            return .dictionary(key: key, value: value)
        }

        private mutating func parseStructure() throws(DBusError) -> DBusType {
            structDepth += 1
            defer { structDepth -= 1 }
            guard structDepth <= DBusSignature.maximumDepth else {
                throw fail("nests structures deeper than \(DBusSignature.maximumDepth)", at: index - 1)
            }
            var fields: [DBusType] = []
            while true {
                guard index < bytes.count else { throw fail("ends inside a structure; ')' is missing") }
                if bytes[index] == UInt8(ascii: ")") {
                    index += 1
                    break
                }
                fields.append(try parseOne())
            }
            guard !fields.isEmpty else { throw fail("has an empty structure '()'", at: index - 2) }
            return .structure(fields)
        }

        private func fail(_ problem: String, at position: Int? = nil) -> DBusError {
            let place = position.map { " (at byte \($0))" } ?? ""
            return DBusError(.invalidSignature, "signature \"\(text)\" \(problem)\(place)")
        }
    }
}
