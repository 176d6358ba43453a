/// A validated D-Bus object path, such as `/org/bluez/hci0`.
///
/// `/` followed by elements of `[A-Za-z0-9_]` separated by single slashes, with no trailing
/// slash except for the root path itself.
public struct DBusObjectPath: Hashable, Sendable, Comparable {
    /// The path text.
    public let rawValue: String

    /// The root path, `/`.
    public static let root = DBusObjectPath(unchecked: "/")

    /// Validates a path.
    /// - Throws: ``DBusError`` (`InvalidArgs`) saying what is wrong with the text.
    public init(_ text: String) throws(DBusError) {
        if let problem = DBusObjectPath.problem(in: text) {
            throw .invalidArgs("object path \"\(text)\" \(problem)")
        }
        rawValue = text
    }

    init(unchecked text: String) {
        rawValue = text
    }

    /// The path of a child object, e.g. `/org/bluez` + `hci0`.
    /// - Throws: ``DBusError`` when `element` is not a valid path element.
    public func appending(_ element: String) throws(DBusError) -> DBusObjectPath {
        try DBusObjectPath(self == .root ? "/" + element : rawValue + "/" + element)
    }

    /// Whether `self` lies strictly below `ancestor` in the path tree.
    public func isDescendant(of ancestor: DBusObjectPath) -> Bool {
        if ancestor == .root { return self != .root }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }

    /// Orders paths by their text.
    public static func < (lhs: DBusObjectPath, rhs: DBusObjectPath) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    static func problem(in text: String) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return "does not start with '/'" }
        if bytes.count == 1 { return nil }
        guard bytes.last != UInt8(ascii: "/") else { return "ends with '/'" }
        var previousWasSlash = false
        for byte in bytes {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return "has an empty element ('//')" }
                previousWasSlash = true
            } else {
                guard DBusName.isWordByte(byte) else {
                    return "has \(DBusName.describe(byte)); elements may hold only A-Z, a-z, 0-9 and '_'"
                }
                previousWasSlash = false
            }
        }
        return nil
    }
}

extension DBusObjectPath: CustomStringConvertible, ExpressibleByStringLiteral {
    /// The path text.
    public var description: String { rawValue }

    /// A path written as a literal in source code. A malformed literal is a programming error
    /// and stops the program, like an out-of-range array index.
    public init(stringLiteral value: String) {
        guard DBusObjectPath.problem(in: value) == nil else {
            preconditionFailure("invalid object path literal \"\(value)\"")
        }
        rawValue = value
    }
}
