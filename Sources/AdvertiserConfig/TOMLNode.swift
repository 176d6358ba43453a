import TOMLKit

/// The parsed config file as plain Swift values. TOMLKit's tables are never freed (its
/// `TOMLTable` has no `deinit`), so TOMLKit is used once per file read, to make this tree, and
/// everything after that (the checks, `bleadvctl set`'s values applied at run time) works on
/// the tree alone.
enum TOMLNode: Hashable, Sendable {
    case string(String)
    case integer(Int)
    case double(Double)
    case bool(Bool)
    case array([TOMLNode])
    case table([String: TOMLNode])
    /// A date, a time or a date-time: no key takes one; kept to say what was found.
    case other(String)

    /// The tree of a TOMLKit value, made once per parse.
    init(_ value: any TOMLValueConvertible) {
        switch value.type {
        case .string: self = .string(value.string ?? "")
        case .int: self = .integer(value.int ?? 0)
        case .double: self = .double(value.double ?? 0)
        case .bool: self = .bool(value.bool ?? false)
        case .array: self = .array((value.array.map(Array.init) ?? []).map(TOMLNode.init))
        case .table:
            var entries: [String: TOMLNode] = [:]
            if let table = value.table {
                for key in table.keys { entries[key] = table[key].map(TOMLNode.init) }
            }
            self = .table(entries)
        case .date, .time, .dateTime: self = .other(value.type.description)
        }
    }

    /// The type's name in error messages: `integer`, `string`, `table`, ...
    var type: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .double: "floating-point number"
        case .bool: "bool"
        case .array: "array"
        case .table: "table"
        case .other(let name): name
        }
    }

    var string: String? { if case .string(let text) = self { text } else { nil } }
    var int: Int? { if case .integer(let number) = self { number } else { nil } }
    var double: Double? { if case .double(let number) = self { number } else { nil } }
    /// A number, whole or not, that is finite (TOML allows inf and nan).
    var finiteNumber: Double? { (double ?? int.map(Double.init)).flatMap { $0.isFinite ? $0 : nil } }
    var bool: Bool? { if case .bool(let flag) = self { flag } else { nil } }
    var array: [TOMLNode]? { if case .array(let values) = self { values } else { nil } }
    var table: [String: TOMLNode]? { if case .table(let entries) = self { entries } else { nil } }
}
