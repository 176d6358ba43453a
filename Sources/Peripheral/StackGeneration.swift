/// One run of the Bluetooth stack's daemon. What it registered lives and dies with it: when it
/// goes, exactly its own registrations are gone, and a registration a later run answered is
/// not. For BlueZ, one bluetoothd on the bus: the generation counts the owners of `org.bluez`
/// the manager has seen, and names the one it is (its unique bus name).
public struct StackGeneration: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// How many runs of the daemon came before this one, plus one: later runs compare greater.
    public let number: Int
    /// Which run it is, as the stack names it (for BlueZ, bluetoothd's unique name, `:1.42`).
    public let name: String

    /// A generation.
    public init(_ number: Int, name: String) {
        self.number = number
        self.name = name
    }

    /// The first run a manager sees (and the one a test means when it names none).
    public static let first = StackGeneration(1, name: "first")

    /// The run after this one.
    public func next(name: String) -> StackGeneration {
        StackGeneration(number + 1, name: name)
    }

    /// Earlier runs compare less.
    public static func < (lhs: StackGeneration, rhs: StackGeneration) -> Bool {
        lhs.number < rhs.number
    }

    /// `#N (name)`, for logs.
    public var description: String { "#\(number) (\(name))" }
}
