public import DBus
public import Peripheral

/// A Swift type an argument of the control API carries: its D-Bus type, and its value each way.
/// A signal's payload (``ControlSignal``) and a method's arguments are made of these, so no
/// member indexes `[DBusValue]` by hand.
public protocol ControlArgument: Sendable, Equatable {
    /// Its D-Bus type (`s`, `a{ss}`, ...).
    static var dbusType: DBusType { get }
    /// The value as D-Bus carries it.
    var dbusValue: DBusValue { get }
    /// The value `dbusValue` carries; nil when it is not of ``dbusType``.
    init?(dbusValue: DBusValue)
}

extension String: ControlArgument {
    /// `s`.
    public static var dbusType: DBusType { .string }
    /// As `s`.
    public var dbusValue: DBusValue { .string(self) }
    /// The text of an `s`.
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.string else { return nil }
        self = value
    }
}

extension Bool: ControlArgument {
    /// `b`.
    public static var dbusType: DBusType { .boolean }
    /// As `b`.
    public var dbusValue: DBusValue { .boolean(self) }
    /// The truth of a `b`.
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.boolean else { return nil }
        self = value
    }
}

extension UInt16: ControlArgument {
    /// `q`.
    public static var dbusType: DBusType { .uint16 }
    /// As `q`.
    public var dbusValue: DBusValue { .uint16(self) }
    /// The number of a `q`.
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.uint16 else { return nil }
        self = value
    }
}

extension UInt32: ControlArgument {
    /// `u`.
    public static var dbusType: DBusType { .uint32 }
    /// As `u`.
    public var dbusValue: DBusValue { .uint32(self) }
    /// The number of a `u`.
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.uint32 else { return nil }
        self = value
    }
}

extension Double: ControlArgument {
    /// `d`.
    public static var dbusType: DBusType { .double }
    /// As `d`.
    public var dbusValue: DBusValue { .double(self) }
    /// The number of a `d`.
    public init?(dbusValue: DBusValue) {
        guard let value = dbusValue.double else { return nil }
        self = value
    }
}

extension Array: ControlArgument where Element: ControlArgument {
    /// An array of its element's type (`as`).
    public static var dbusType: DBusType { .array(Element.dbusType) }
    /// As an array, in its order.
    public var dbusValue: DBusValue { .array(Element.dbusType, map(\.dbusValue)) }
    /// The elements of an array; nil when one is not an `Element`.
    public init?(dbusValue: DBusValue) {
        guard case .array(Element.dbusType, let items) = dbusValue else { return nil }
        var elements: [Element] = []
        for item in items {
            guard let element = Element(dbusValue: item) else { return nil }
            elements.append(element)
        }
        self = elements
    }
}

extension Dictionary: ControlArgument where Key == String, Value: ControlArgument {
    /// A dictionary of strings (`a{ss}`, `a{sv}`).
    public static var dbusType: DBusType { .dictionary(key: .string, value: Value.dbusType) }
    /// As a dictionary, its entries sorted by key (what is sent does not depend on hashing).
    public var dbusValue: DBusValue {
        .dictionary(key: .string, value: Value.dbusType, sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), $0.value.dbusValue) })
    }
    /// The entries of a dictionary; nil when one is not of its types, or a key comes twice.
    public init?(dbusValue: DBusValue) {
        guard case .dictionary(.string, Value.dbusType, let entries) = dbusValue else { return nil }
        var dictionary: [String: Value] = [:]
        for entry in entries {
            guard let key = entry.key.string, let value = Value(dbusValue: entry.value),
                  dictionary.updateValue(value, forKey: key) == nil else { return nil }
        }
        self = dictionary
    }
}

extension Optional: ControlArgument where Wrapped == GATTValue {
    /// A variant (`v`): a number (`d`), text (`s`) or bytes (`ay`) as the characteristic's
    /// format says, and no bytes for a value not shown.
    public static var dbusType: DBusType { .variant }
    /// In a variant; nil as no bytes.
    public var dbusValue: DBusValue {
        switch self {
        case .number(let number)?: .variant(.double(number))
        case .text(let text)?: .variant(.string(text))
        case .bytes(let bytes)?: .variant(.bytes(bytes))
        case nil: .variant(.bytes([]))
        }
    }
    /// The value in a variant: a `d` is a number, an `s` text, bytes are bytes, and no bytes
    /// are nil (not shown: D-Bus does not tell them from an empty write). Nil for any other.
    public init?(dbusValue: DBusValue) {
        switch dbusValue.variantValue {
        case .double(let number)?: self = .some(.number(number))
        case .string(let text)?: self = .some(.text(text))
        case let value? where value.bytes?.isEmpty == true: self = .none
        case let value?:
            guard let bytes = value.bytes else { return nil }
            self = .some(.bytes(bytes))
        case nil: return nil
        }
    }
}

extension Array where Element == DBusValue {
    /// The values (a call's arguments, a reply) as one `A`; nil unless they are exactly that.
    func decoded<A: ControlArgument>(_ a: A.Type) -> A? {
        count == 1 ? A(dbusValue: self[0]) : nil
    }

    /// The values as `A` and `B`; nil unless they are exactly those.
    func decoded<A: ControlArgument, B: ControlArgument>(_ a: A.Type, _ b: B.Type) -> (A, B)? {
        guard count == 2, let first = A(dbusValue: self[0]), let second = B(dbusValue: self[1]) else { return nil }
        return (first, second)
    }
}
