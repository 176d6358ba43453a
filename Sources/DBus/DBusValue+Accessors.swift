extension DBusValue {
    /// The string, when this is an `s`.
    public var string: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The boolean, when this is a `b`.
    public var boolean: Bool? {
        if case .boolean(let value) = self { value } else { nil }
    }

    /// The byte, when this is a `y`.
    public var byte: UInt8? {
        if case .byte(let value) = self { value } else { nil }
    }

    /// The number, when this is an `n`.
    public var int16: Int16? {
        if case .int16(let value) = self { value } else { nil }
    }

    /// The number, when this is a `q`.
    public var uint16: UInt16? {
        if case .uint16(let value) = self { value } else { nil }
    }

    /// The number, when this is an `i`.
    public var int32: Int32? {
        if case .int32(let value) = self { value } else { nil }
    }

    /// The number, when this is a `u`.
    public var uint32: UInt32? {
        if case .uint32(let value) = self { value } else { nil }
    }

    /// The number, when this is a `d`.
    public var double: Double? {
        if case .double(let value) = self { value } else { nil }
    }

    /// The path, when this is an `o`.
    public var objectPath: DBusObjectPath? {
        if case .objectPath(let value) = self { value } else { nil }
    }

    /// The elements, when this is an array (not a dictionary).
    public var arrayElements: [DBusValue]? {
        if case .array(_, let items) = self { items } else { nil }
    }

    /// The strings, when this is an `as`.
    public var stringArray: [String]? {
        guard case .array(.string, let items) = self else { return nil }
        return items.compactMap(\.string)
    }

    /// The bytes, when this is an `ay`.
    public var bytes: [UInt8]? {
        guard case .array(.byte, let items) = self else { return nil }
        return items.compactMap(\.byte)
    }

    /// The entries, when this is a dictionary.
    public var dictionaryEntries: [DBusDictEntry]? {
        if case .dictionary(_, _, let entries) = self { entries } else { nil }
    }

    /// The contents of an `a{sv}` keyed by name with the variants unwrapped, when this is one.
    public var variantDictionary: [String: DBusValue]? {
        guard case .dictionary(.string, .variant, let entries) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            if let key = entry.key.string, case .variant(let inner) = entry.value {
                result[key] = inner
            }
        }
        return result
    }

    /// The inner value, when this is a variant.
    public var variantValue: DBusValue? {
        if case .variant(let inner) = self { inner } else { nil }
    }

    /// An `as` of the given strings.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(.string, values.map(DBusValue.string))
    }

    /// An `ay` of the given bytes.
    public static func bytes(_ values: [UInt8]) -> DBusValue {
        .array(.byte, values.map(DBusValue.byte))
    }

    /// An `a{sv}` with the entries sorted by key, so equal dictionaries marshal to equal bytes.
    public static func variantDictionary(_ values: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: .string, value: .variant,
            values.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .variant($0.value)) })
    }
}
