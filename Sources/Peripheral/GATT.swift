/// GATT: the services a connected central finds behind a connectable advertisement.
///
/// An application is a list of services, each a list of characteristics with a value, a
/// format and flags. Names (of services, of characteristics) are the domain's handles: the
/// implementation maps them to what its stack needs (for BlueZ, exported object paths).

/// What a central may do with a characteristic (GATT's properties, as BlueZ names them).
public enum GATTFlag: String, Hashable, Sendable, CaseIterable, Comparable {
    /// A central may read the value.
    case read
    /// A central may write the value and gets a response.
    case write
    /// A central may write the value without a response (ATT's write command).
    case writeWithoutResponse = "write-without-response"
    /// A central may subscribe to notifications of changes.
    case notify
    /// A central may subscribe to indications (acknowledged notifications) of changes.
    case indicate

    /// Orders flags by name, for stable output.
    public static func < (lhs: GATTFlag, rhs: GATTFlag) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Whether a central may change the value.
    public var isWrite: Bool { self == .write || self == .writeWithoutResponse }
}

/// The link a central needs before it may read, write or subscribe to a characteristic. The
/// stack enforces it (BlueZ answers a central on a weaker link with ATT's Insufficient
/// Encryption or Insufficient Authentication, and a central usually pairs then).
public enum GATTSecurity: String, Hashable, Sendable, CaseIterable {
    /// Any connected central: nothing protects the value on air or who sends it.
    case none
    /// An encrypted link, from a bond of any kind (just-works included): a passive listener
    /// learns nothing, but a device in the middle during pairing could.
    case encrypted
    /// An encrypted link from a bond with MITM protection (a passkey or numeric comparison): the
    /// central is the one the person paired.
    case authenticated
    /// An authenticated link made with LE Secure Connections (ECDH), with a 128-bit key: what
    /// was recorded of the pairing cannot be decrypted later.
    case secure
}

/// How a characteristic's value is laid out on air: the formats of the Bluetooth SIG's
/// characteristic definitions (little-endian integers with a decimal exponent, IEEE-754
/// float32, UTF-8 text) and plain bytes.
public struct GATTFormat: Hashable, Sendable {
    /// The layout.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// An unsigned byte.
        case uint8
        /// An unsigned 16-bit integer, little-endian.
        case uint16
        /// An unsigned 32-bit integer, little-endian.
        case uint32
        /// A signed byte.
        case sint8
        /// A signed 16-bit integer, little-endian.
        case sint16
        /// A signed 32-bit integer, little-endian.
        case sint32
        /// An IEEE 754 single-precision number, little-endian.
        case float32
        /// UTF-8 text, without a terminator.
        case utf8
        /// Bytes as they are, written as hex in the config and on the command line.
        case hex
    }

    /// The layout.
    public var kind: Kind
    /// The decimal exponent of an integer format: the value on air is the number divided by
    /// 10^exponent (Temperature 0x2A6E is sint16 with -2: 21.5 °C goes on air as 2150).
    public var exponent: Int
    /// The numbers allowed, in the config's units; nil for all the layout holds.
    public var range: ClosedRange<Double>?
    /// The most bytes of a `utf8` or `hex` value (ATT allows 512).
    public var maximumLength: Int

    /// The longest attribute value ATT allows.
    public static let attributeLimit = 512

    /// A format.
    public init(_ kind: Kind, exponent: Int = 0, range: ClosedRange<Double>? = nil, maximumLength: Int = attributeLimit) {
        self.kind = kind
        self.exponent = exponent
        self.range = range
        self.maximumLength = min(maximumLength, Self.attributeLimit)
    }

    /// The byte count of a fixed-size layout; nil for `utf8` and `hex`.
    public var size: Int? {
        switch kind {
        case .uint8, .sint8: 1
        case .uint16, .sint16: 2
        case .uint32, .sint32, .float32: 4
        case .utf8, .hex: nil
        }
    }

    /// Whether values are numbers.
    public var isNumeric: Bool { size != nil }

    private var integerBounds: ClosedRange<Double>? {
        switch kind {
        case .uint8: 0...Double(UInt8.max)
        case .uint16: 0...Double(UInt16.max)
        case .uint32: 0...Double(UInt32.max)
        case .sint8: Double(Int8.min)...Double(Int8.max)
        case .sint16: Double(Int16.min)...Double(Int16.max)
        case .sint32: Double(Int32.min)...Double(Int32.max)
        case .float32, .utf8, .hex: nil
        }
    }

    private var scale: Double { power(of10: abs(exponent)) }

    /// The bytes of `value`.
    /// - Throws: ``PeripheralError`` (`invalidValue`) saying why it does not fit: the wrong kind
    ///   of value, out of range, too long.
    public func encode(_ value: GATTValue) throws(PeripheralError) -> [UInt8] {
        switch (kind, value) {
        case (.utf8, .text(let text)):
            let bytes = Array(text.utf8)
            try checkLength(bytes.count)
            return bytes
        case (.hex, .bytes(let bytes)):
            try checkLength(bytes.count)
            return bytes
        case (.float32, .number(let number)):
            try checkRange(number)
            guard let float = Float(exactly: Float(number)), float.isFinite else {
                throw PeripheralError(.invalidValue, "\(number) does not fit a float32")
            }
            return littleEndian(UInt64(float.bitPattern), count: 4)
        case (_, .number(let number)) where integerBounds != nil:
            try checkRange(number)
            let raw = (exponent < 0 ? number * scale : number / scale).rounded()
            guard integerBounds!.contains(raw) else {
                throw PeripheralError(.invalidValue, "\(Self.shown(number)) does not fit \(kind.rawValue)\(exponent == 0 ? "" : " with exponent \(exponent)")")
            }
            return littleEndian(UInt64(bitPattern: Int64(raw)), count: size!)
        default:
            throw PeripheralError(.invalidValue, "a \(kind.rawValue) characteristic takes \(expected), not \(value.kind)")
        }
    }

    /// What `bytes` mean in this format, as a central wrote them.
    /// - Throws: ``GATTWriteError`` saying why they are refused: the wrong length for the layout,
    ///   text that is not UTF-8, a number outside the range.
    public func decode(_ bytes: [UInt8]) throws(GATTWriteError) -> GATTValue {
        if let size, bytes.count != size {
            throw .invalidLength("\(kind.rawValue) is \(size) byte\(size == 1 ? "" : "s"), not \(bytes.count)")
        }
        if size == nil, bytes.count > maximumLength {
            throw .invalidLength("at most \(maximumLength) bytes, not \(bytes.count)")
        }
        let raw = bytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        let number: Double
        switch kind {
        case .utf8:
            guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalidValue("the bytes are not UTF-8 text") }
            return .text(text)
        case .hex: return .bytes(bytes)
        case .float32:
            number = Double(Float(bitPattern: UInt32(raw)))
            guard number.isFinite else { throw .invalidValue("\(number) is not a finite number") }
        case .uint8, .uint16, .uint32: number = scaled(Double(raw))
        case .sint8: number = scaled(Double(Int8(truncatingIfNeeded: raw)))
        case .sint16: number = scaled(Double(Int16(truncatingIfNeeded: raw)))
        case .sint32: number = scaled(Double(Int32(truncatingIfNeeded: raw)))
        }
        if let range, !range.contains(number) {
            throw .invalidValue("\(Self.shown(number)) is outside \(Self.shown(range.lowerBound)) to \(Self.shown(range.upperBound))")
        }
        return .number(number)
    }

    private func scaled(_ raw: Double) -> Double {
        exponent < 0 ? raw / scale : raw * scale
    }

    private var expected: String {
        switch kind {
        case .utf8: "text"
        case .hex: "hex bytes"
        default: "a number"
        }
    }

    private func checkLength(_ count: Int) throws(PeripheralError) {
        guard count <= maximumLength else {
            throw PeripheralError(.invalidValue, "is \(count) bytes; a \(kind.rawValue) value here is at most \(maximumLength)")
        }
    }

    private func checkRange(_ number: Double) throws(PeripheralError) {
        guard number.isFinite else { throw PeripheralError(.invalidValue, "\(number) is not a finite number") }
        if let range, !range.contains(number) {
            throw PeripheralError(.invalidValue, "is \(Self.shown(number)); it must be between \(Self.shown(range.lowerBound)) and \(Self.shown(range.upperBound))")
        }
    }

    /// A number without a needless `.0`.
    public static func shown(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}

/// A characteristic's value as people write it: a number (in the format's units), text, or bytes.
public enum GATTValue: Hashable, Sendable, CustomStringConvertible {
    /// A number, in the format's units (21.5 for 21.5 °C).
    case number(Double)
    /// Text.
    case text(String)
    /// Bytes.
    case bytes([UInt8])

    /// What kind of value this is, for messages.
    public var kind: String {
        switch self {
        case .number: "a number"
        case .text: "text"
        case .bytes: "bytes"
        }
    }

    /// The value as the config file would write it (text unescaped: escape it before a terminal).
    public var description: String {
        switch self {
        case .number(let number): GATTFormat.shown(number)
        case .text(let text): text
        case .bytes(let bytes): Hex.encode(bytes)
        }
    }
}

/// Why a central's write is refused; each maps to the ATT error a central expects.
public enum GATTWriteError: Error, Hashable, Sendable {
    /// The value has the wrong length for the characteristic (ATT 0x0D).
    case invalidLength(String)
    /// The value has the right length but means nothing allowed (out of range, not UTF-8).
    case invalidValue(String)
    /// The write starts past the value or in it (a long write); values are written whole (ATT 0x07).
    case invalidOffset(String)
    /// The characteristic does not take writes (ATT 0x03).
    case notPermitted(String)

    /// What is wrong.
    public var message: String {
        switch self {
        case .invalidLength(let message), .invalidValue(let message), .invalidOffset(let message),
             .notPermitted(let message): message
        }
    }
}

/// One characteristic: its UUID, what centrals may do with it, its format and current value.
public struct GATTCharacteristic: Hashable, Sendable {
    /// The name the config and `bleadvctl set` use (`level`, `temperature`).
    public var name: String
    /// Its UUID (0x2A19 Battery Level).
    public var uuid: BluetoothUUID
    /// What centrals may do with it.
    public var flags: Set<GATTFlag>
    /// How its value is laid out.
    public var format: GATTFormat
    /// The value on air.
    public var value: [UInt8]
    /// What it is, for people: its Characteristic User Description descriptor (0x2901), which
    /// apps such as nRF Connect show as its name. Nil for none.
    public var userDescription: String?
    /// The link a central needs for everything its flags allow.
    public var security: GATTSecurity
    /// What answers a central's read when it asks (a program run then), rather than the value
    /// held; nil for the value held. Given with the characteristic when its application is
    /// registered, as the handler of a read.
    public var onRead: GATTReadHandler?

    /// A characteristic.
    public init(
        name: String, uuid: BluetoothUUID, flags: Set<GATTFlag>, format: GATTFormat, value: [UInt8],
        userDescription: String? = nil, security: GATTSecurity = .none, onRead: GATTReadHandler? = nil
    ) {
        self.name = name
        self.uuid = uuid
        self.flags = flags
        self.format = format
        self.value = value
        self.userDescription = userDescription
        self.security = security
        self.onRead = onRead
    }

    /// Its flags through which a central learns the value: read, notify, indicate.
    public var readableFlags: Set<GATTFlag> {
        flags.intersection([.read, .notify, .indicate])
    }

    /// Whether centrals can only write it (no ``readableFlags``): what they write (a PIN, a
    /// password) is a secret, never shown outside the daemon.
    public var isSecret: Bool {
        readableFlags.isEmpty
    }

    /// The Characteristic User Description descriptor's UUID.
    public static let userDescriptionUUID = BluetoothUUID(0x2901)
}

/// Answers centrals' reads of the characteristics whose values are made when asked
/// (``GATTCharacteristic/onRead``).
public protocol GATTReadAnswering: AnyObject, Sendable {
    /// The bytes that answer `central`'s read of `characteristic` (`central` empty when the
    /// stack did not say who).
    /// - Throws: ``GATTReadError`` when there is no fresh value to give: the central gets an
    ///   ATT error, never a value passed off as fresh.
    func answer(_ characteristic: GATTCharacteristicID, central: String) async throws(GATTReadError) -> [UInt8]
}

/// A characteristic's read handler (``GATTCharacteristic/onRead``): its answerer, the same
/// handler as long as it is the same answerer (an application served again with it is
/// unchanged).
public struct GATTReadHandler: Hashable, Sendable {
    /// What answers the reads.
    public let answerer: any GATTReadAnswering

    /// A handler asking `answerer`.
    public init(_ answerer: any GATTReadAnswering) {
        self.answerer = answerer
    }

    /// Whether `a` and `b` ask the same answerer.
    public static func == (a: Self, b: Self) -> Bool {
        a.answerer === b.answerer
    }

    /// Hashes the answerer's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(answerer))
    }
}

/// Why a read got no value (a program that failed or ran past its time), in a line.
public struct GATTReadError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What happened, without anything the program printed.
    public var description: String

    /// An error.
    public init(_ description: String) {
        self.description = description
    }
}

/// One service: its UUID and characteristics.
public struct GATTService: Hashable, Sendable {
    /// The name the config and `bleadvctl` use.
    public var name: String
    /// Its UUID (0x180F Battery).
    public var uuid: BluetoothUUID
    /// Whether it is a primary service (found by discovery) rather than included by another.
    public var primary: Bool
    /// Its characteristics, in the order they are exported.
    public var characteristics: [GATTCharacteristic]

    /// A service.
    public init(name: String, uuid: BluetoothUUID, primary: Bool = true, characteristics: [GATTCharacteristic]) {
        self.name = name
        self.uuid = uuid
        self.primary = primary
        self.characteristics = characteristics
    }
}

/// The services one program offers, registered together.
public struct GATTApplication: Hashable, Sendable {
    /// The services, in the order they are exported.
    public var services: [GATTService]

    /// An application.
    public init(services: [GATTService]) {
        self.services = services
    }

    /// The application with every value emptied: two applications of the same shape differ in
    /// values only, which change in place; any other change needs a new registration.
    public var shape: GATTApplication {
        GATTApplication(services: services.map { service in
            var service = service
            service.characteristics = service.characteristics.map { var c = $0; c.value = []; return c }
            return service
        })
    }

    /// The characteristic `id` names.
    public subscript(id: GATTCharacteristicID) -> GATTCharacteristic? {
        get {
            services.first { $0.name == id.service }?.characteristics.first { $0.name == id.characteristic }
        }
        set {
            guard let newValue, let s = services.firstIndex(where: { $0.name == id.service }),
                  let c = services[s].characteristics.firstIndex(where: { $0.name == id.characteristic }) else { return }
            services[s].characteristics[c] = newValue
        }
    }

    /// Every characteristic with its identity, in order.
    public var characteristics: [(id: GATTCharacteristicID, characteristic: GATTCharacteristic)] {
        services.flatMap { service in
            service.characteristics.map { (GATTCharacteristicID(service: service.name, characteristic: $0.name), $0) }
        }
    }
}

/// A characteristic by its service's name and its own.
public struct GATTCharacteristicID: Hashable, Sendable, CustomStringConvertible {
    /// The service's name.
    public var service: String
    /// The characteristic's name.
    public var characteristic: String

    /// An identity.
    public init(service: String, characteristic: String) {
        self.service = service
        self.characteristic = characteristic
    }

    /// `service.characteristic`.
    public var description: String { "\(service).\(characteristic)" }
}

/// What a connected central did with a characteristic.
public struct GATTEvent: Hashable, Sendable, CustomStringConvertible {
    /// What it did.
    public enum Kind: Hashable, Sendable {
        /// It read the value.
        case read
        /// It wrote these bytes, checked against the format and taken, and what they mean in it
        /// (decoded once, where they were checked).
        case written([UInt8], GATTValue)
        /// It subscribed to notifications or indications.
        case subscribed
        /// It unsubscribed (or went away).
        case unsubscribed
    }

    /// The characteristic.
    public var characteristic: GATTCharacteristicID
    /// What happened.
    public var kind: Kind
    /// The central's address (`AA:BB:CC:DD:EE:FF`), when the stack said; empty otherwise.
    public var central: String
    /// The link's ATT MTU, when the stack said (BlueZ passes it with each read and write).
    public var mtu: Int?

    /// An event.
    public init(_ characteristic: GATTCharacteristicID, _ kind: Kind, central: String, mtu: Int? = nil) {
        self.characteristic = characteristic
        self.kind = kind
        self.central = central
        self.mtu = mtu
    }

    /// `power.level read by AA:BB:CC:DD:EE:FF`, `lamp.brightness written (1 byte) by ...`:
    /// never what was written, which for a write-only characteristic is a secret (a PIN, a
    /// Wi-Fi password); the daemon announces the values of the others itself.
    public var description: String {
        let what: String = switch kind {
        case .read: "read"
        case .written(let bytes, _): "written (\(bytes.count) byte\(bytes.count == 1 ? "" : "s"))"
        case .subscribed: "subscribed to"
        case .unsubscribed: "unsubscribed from"
        }
        return "\(characteristic) \(what)" + (central.isEmpty ? "" : " by \(central)")
    }
}
