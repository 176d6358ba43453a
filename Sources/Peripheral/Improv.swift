/// Improv Wi-Fi over Bluetooth LE (improv-wifi.com/ble, with the commands Home Assistant's
/// client `py-improv-ble-client` speaks): a device without a screen is given Wi-Fi
/// credentials by a client that found it by its advertisement.
///
/// The device offers one GATT service of five characteristics: its state, its last error
/// and its capabilities (one byte each, read and notified), an RPC command a client writes and
/// an RPC result the device notifies. A command or result is a frame: its command byte, the
/// length of its data, the data, and a checksum (the low byte of the sum of all the bytes
/// before it). Its advertisement carries the service's UUID and, in the same packet, service
/// data 0x4677: the state, the capabilities and four reserved zeros.
///
/// This type is the wire format only; what a command does is the daemon's.
public enum Improv {
    /// The Improv service.
    public static let serviceUUID = uuid(0x8000)
    /// The device's state (``State``, one byte): read, notify.
    public static let stateUUID = uuid(0x8001)
    /// The last error (``ErrorState``, one byte): read, notify.
    public static let errorUUID = uuid(0x8002)
    /// Where a client writes a command frame.
    public static let commandUUID = uuid(0x8003)
    /// Where the device notifies a result frame: read, notify.
    public static let resultUUID = uuid(0x8004)
    /// What the device supports (``Capabilities``, one byte): read.
    public static let capabilitiesUUID = uuid(0x8005)
    /// The 16-bit UUID of the advertisement's service data.
    public static let serviceDataUUID = BluetoothUUID(0x4677)

    private static func uuid(_ last: UInt16) -> BluetoothUUID {
        BluetoothUUID(bytes: [0x00, 0x46, 0x77, 0x68, 0x62, 0x28, 0x22, 0x72, 0x46, 0x63, 0x27, 0x74, 0x78, 0x26, UInt8(last >> 8), UInt8(last & 0xFF)])!
    }

    /// Where the device is in being put on a network.
    public enum State: UInt8, Hashable, Sendable, CaseIterable {
        /// Waiting for a person to allow provisioning (here: `bleadvctl improv authorize`).
        case authorizationRequired = 0x01
        /// Ready to take credentials.
        case authorized = 0x02
        /// Credentials received; connecting.
        case provisioning = 0x03
        /// Connected.
        case provisioned = 0x04
    }

    /// The last error, 0 for none.
    public enum ErrorState: UInt8, Hashable, Sendable, CaseIterable, Error {
        /// No error.
        case none = 0x00
        /// The frame was malformed: a wrong length, checksum or layout.
        case invalidRPC = 0x01
        /// A command this device does not know.
        case unknownRPC = 0x02
        /// The credentials were tried and the network could not be joined, or the password is
        /// none a WPA network takes (refused before any join).
        case unableToConnect = 0x03
        /// Credentials (or a hostname) sent before authorization.
        case notAuthorized = 0x04
        /// A hostname that is not one (RFC 1123: letters, digits and hyphens).
        case badHostname = 0x05
        /// Something else failed.
        case unknown = 0xFF
    }

    /// What the device supports beyond sending Wi-Fi settings: a set of the spec's bits.
    public struct Capabilities: Hashable, Sendable, ExpressibleByArrayLiteral {
        /// The bits.
        public let rawValue: UInt8
        /// Capabilities from their byte.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The capabilities listed.
        public init(arrayLiteral elements: Capabilities...) { rawValue = elements.reduce(0) { $0 | $1.rawValue } }
        /// Whether all of `other` is among these.
        public func contains(_ other: Capabilities) -> Bool { rawValue & other.rawValue == other.rawValue }
        /// It can identify itself (a light, a sound: here, a command run).
        public static let identify = Capabilities(rawValue: 1 << 0)
        /// It answers with its firmware, version, hardware and name.
        public static let deviceInfo = Capabilities(rawValue: 1 << 1)
        /// It lists the Wi-Fi networks it sees.
        public static let scan = Capabilities(rawValue: 1 << 2)
        /// Its hostname can be read and set.
        public static let hostname = Capabilities(rawValue: 1 << 3)
        /// These and `other`.
        public func union(_ other: Capabilities) -> Capabilities { Capabilities(rawValue: rawValue | other.rawValue) }
    }

    /// A Wi-Fi network in range, as the scan command answers it.
    public struct Network: Hashable, Sendable {
        /// How a network is secured, as Improv names it.
        public enum Security: String, Hashable, Sendable {
            /// No password.
            case open = "NO"
            /// WEP (privacy without WPA).
            case wep = "WEP"
            /// WPA personal.
            case wpa = "WPA"
            /// WPA2 (RSN) or newer.
            case wpa2 = "WPA2"
        }
        /// Its name as broadcast: up to 32 bytes, not necessarily text.
        public var ssid: [UInt8]
        /// Its signal, in dBm.
        public var rssi: Int
        /// What it needs to join.
        public var security: Security

        /// A network named `ssid` heard at `rssi` dBm, secured by `security`.
        public init(ssid: [UInt8], rssi: Int, security: Security) {
            self.ssid = ssid
            self.rssi = rssi
            self.security = security
        }
    }

    /// Wi-Fi credentials, typed where they enter: an SSID of 1 to 32 bytes (802.11), and a
    /// password that is none (an open network), a WPA passphrase of 8 to 63 printable ASCII
    /// characters, or a pre-shared key of 64 hex digits (IEEE 802.11i, Annex H). Nothing else can
    /// be made one, so no program bleadvd hands them to meets a line break, a quote's end it did
    /// not expect, a NUL or a control character. Its description never shows the password.
    public struct Credentials: Hashable, Sendable, CustomStringConvertible {
        /// The network's name as sent: 1 to 32 bytes, not necessarily text.
        public let ssid: [UInt8]
        /// The passphrase as sent: empty, 8 to 63 bytes of 0x20 to 0x7E, or 64 hex digits.
        public let password: [UInt8]

        /// The SSID lengths 802.11 allows.
        public static let ssidLengths = 1...32
        /// The passphrase lengths WPA allows (a key of 64 hex digits aside).
        public static let passphraseLengths = 8...63

        /// Credentials, or nil when ``refusal(ssid:password:)`` has a reason.
        public init?(ssid: [UInt8], password: [UInt8]) {
            guard Self.refusal(ssid: ssid, password: password) == nil else { return nil }
            self.ssid = ssid
            self.password = password
        }

        /// Why `ssid` and `password` are no credentials, in a line that shows neither the
        /// password nor its bytes; nil when they are.
        public static func refusal(ssid: [UInt8], password: [UInt8]) -> String? {
            guard ssidLengths.contains(ssid.count) else {
                return "an SSID is \(ssidLengths.lowerBound) to \(ssidLengths.upperBound) bytes, not \(ssid.count)"
            }
            if password.isEmpty || isKey(password) { return nil }
            let printable = password.allSatisfy { (0x20...0x7E).contains($0) }
            guard passphraseLengths.contains(password.count), printable else {
                return "a WPA password is \(passphraseLengths.lowerBound) to \(passphraseLengths.upperBound) printable ASCII characters or 64 hex digits,"
                    + " not \(password.count) bytes\(printable ? "" : " with some not printable ASCII")"
            }
            return nil
        }

        /// Whether `password` is a pre-shared key: 64 hex digits.
        public static func isKey(_ password: [UInt8]) -> Bool {
            password.count == 64 && password.allSatisfy { byte in
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
            }
        }

        /// The SSID, escaped and quoted, and whether a password came.
        public var description: String {
            "\(Untrusted.quoted(String(decoding: ssid, as: UTF8.self))) (\(password.isEmpty ? "no password" : "a password"))"
        }
    }

    /// A command a client sent.
    public enum Command: Hashable, Sendable {
        /// Join this network (needs authorization).
        case wifi(Credentials)
        /// Identify yourself.
        case identify
        /// Say what you are.
        case deviceInfo
        /// List the networks you see.
        case scan
        /// Say your hostname (nil) or take this one (needs authorization).
        case hostname(String?)

        /// Its command byte: the result it gets carries the same.
        public var id: UInt8 {
            switch self {
            case .wifi: 0x01
            case .identify: 0x02
            case .deviceInfo: 0x03
            case .scan: 0x04
            case .hostname: 0x05
            }
        }
    }

    /// The longest frame: command, length, 255 bytes of data, checksum.
    public static let maximumFrame = 258

    /// Joins a command frame that a client wrote in pieces (the spec allows it for frames over
    /// 20 bytes; Home Assistant's client writes each frame at once, and BlueZ joins a long
    /// write into one).
    public struct Assembler: Hashable, Sendable {
        /// What the bytes so far make.
        public enum Piece: Hashable, Sendable {
            /// A whole frame (its checksum not yet checked).
            case frame([UInt8])
            /// The start of one: the rest is to come.
            case incomplete
            /// More bytes than the frame's length byte says.
            case overrun
        }

        /// The bytes of the frame under way.
        public private(set) var pending: [UInt8] = []

        /// An assembler with nothing under way.
        public init() {}

        /// Adds a write's bytes.
        public mutating func add(_ bytes: [UInt8]) -> Piece {
            pending += bytes
            guard pending.count >= 2, pending.count >= Int(pending[1]) + 3 else { return .incomplete }
            defer { pending = [] }
            return pending.count == Int(pending[1]) + 3 ? .frame(pending) : .overrun
        }

        /// Drops what is under way (the central left, or took too long), its bytes zeroed
        /// first: they may hold a Wi-Fi password.
        public mutating func reset() {
            pending.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
            pending = []
        }
    }

    /// The command in `frame`, or the error the device reports for it.
    public static func command(from frame: [UInt8]) -> Result<Command, ErrorState> {
        guard let strings = strings(in: frame) else { return .failure(.invalidRPC) }
        switch (frame[0], strings.count) {
        case (0x01, 2):
            guard Credentials.ssidLengths.contains(strings[0].count) else { return .failure(.invalidRPC) }
            // A password no WPA network takes is refused before any program meets it, as a
            // join that cannot succeed: what a client shows its user ("unable to connect").
            guard let credentials = Credentials(ssid: strings[0], password: strings[1]) else { return .failure(.unableToConnect) }
            return .success(.wifi(credentials))
        case (0x02, 0): return .success(.identify)
        case (0x03, 0): return .success(.deviceInfo)
        case (0x04, 0): return .success(.scan)
        case (0x05, 0): return .success(.hostname(nil))
        case (0x05, 1):
            guard let name = String(validating: strings[0], as: UTF8.self), isHostname(name) else { return .failure(.badHostname) }
            return .success(.hostname(name))
        case (0x01...0x05, _): return .failure(.invalidRPC)
        default: return .failure(.unknownRPC)
        }
    }

    /// A result frame for command `id` carrying `strings`, or nil when they do not fit in one
    /// frame (255 bytes of data, each string at most 255 bytes with its length byte).
    public static func result(of id: UInt8, _ strings: [String]) -> [UInt8]? {
        result(of: id, fields: strings.map { Array($0.utf8) })
    }

    /// A result frame for command `id` carrying `fields` as they are, or nil when they do not
    /// fit in one frame.
    static func result(of id: UInt8, fields: [[UInt8]]) -> [UInt8]? {
        let data = fields.flatMap { field -> [UInt8] in [UInt8(truncatingIfNeeded: field.count)] + field }
        guard data.count <= 255, fields.allSatisfy({ $0.count <= 255 }) else { return nil }
        return framed(id, data)
    }

    /// The scan command's result: each network's SSID (its bytes as broadcast), RSSI and
    /// security, strongest first, as many as fit in one frame (the spec allows one result).
    public static func scanResult(_ networks: [Network]) -> [UInt8] {
        var fields: [[UInt8]] = []
        for network in networks.sorted(by: { $0.rssi > $1.rssi }) {
            let more = fields + [network.ssid, Array(String(network.rssi).utf8), Array(network.security.rawValue.utf8)]
            guard result(of: Command.scan.id, fields: more) != nil else { break }
            fields = more
        }
        return result(of: Command.scan.id, fields: fields)!
    }

    /// The advertisement's service data: the state, the capabilities, four reserved zeros.
    public static func serviceData(state: State, capabilities: Capabilities) -> [UInt8] {
        [state.rawValue, capabilities.rawValue, 0, 0, 0, 0]
    }

    /// Whether `name` is a hostname label as RFC 1123 allows: 1 to 63 letters, digits and
    /// hyphens, not starting or ending with a hyphen.
    public static func isHostname(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...63).contains(bytes.count), bytes.first != UInt8(ascii: "-"), bytes.last != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
        }
    }

    /// `id`, the data's length, the data and the checksum.
    static func framed(_ id: UInt8, _ data: [UInt8]) -> [UInt8] {
        let head = [id, UInt8(data.count)] + data
        return head + [checksum(head)]
    }

    /// The low byte of the sum of `bytes`.
    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt8 {
        UInt8(truncatingIfNeeded: bytes.reduce(0) { $0 + Int($1) })
    }

    /// The length-prefixed strings a well-formed frame carries, or nil when the frame's length
    /// byte, checksum or strings do not add up.
    static func strings(in frame: [UInt8]) -> [[UInt8]]? {
        guard frame.count >= 3, Int(frame[1]) == frame.count - 3, checksum(frame.dropLast()) == frame.last else { return nil }
        var strings: [[UInt8]] = []
        var at = 2
        let end = frame.count - 1
        while at < end {
            let length = Int(frame[at])
            guard at + 1 + length <= end else { return nil }
            strings.append(Array(frame[(at + 1)..<(at + 1 + length)]))
            at += 1 + length
        }
        return strings
    }
}
