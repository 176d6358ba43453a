/// An error from the advertising core or a `PeripheralManaging` implementation: a code a
/// program can switch on and a message a person can act on.
public struct PeripheralError: Error, Hashable, Sendable {
    /// What kind of failure this is. New kinds may come: a `switch` over codes needs a
    /// `default`. The raw value is the code's name on the control API (`errorCode` in a status,
    /// `org.bleadvd.Error.<RawValue>` capitalised), which stays as it is.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. `noFreeInstance`.
        public let rawValue: String

        /// The code named `rawValue`.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// The code's name.
        public var description: String { rawValue }

        /// What was given to register breaks a rule or does not fit (an advertisement, a GATT
        /// application); registering it would fail the same way. `InvalidAdvertisement` on the
        /// control API.
        public static let invalid = Code(rawValue: "invalidAdvertisement")
        /// A value could not be parsed (a UUID, hex bytes, a URL for Eddystone, a characteristic's
        /// value).
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// The adapter has no free advertising instance ("Maximum advertisements reached").
        public static let noFreeInstance = Code(rawValue: "noFreeInstance")
        /// BlueZ or the kernel refused for a reason that may pass (busy, failed to register).
        public static let failed = Code(rawValue: "failed")
        /// BlueZ rejected what it read back ("Failed to parse advertisement", an application it
        /// cannot take).
        public static let rejected = Code(rawValue: "rejected")
        /// It is registered already.
        public static let alreadyRegistered = Code(rawValue: "alreadyRegistered")
        /// Nothing is registered under that identity.
        public static let notRegistered = Code(rawValue: "notRegistered")
        /// Nothing has that name (an advertisement, a service, a characteristic).
        public static let unknownName = Code(rawValue: "unknownName")
        /// No adapter that can advertise, or the named adapter is gone.
        public static let noAdapter = Code(rawValue: "noAdapter")
        /// The adapter is powered off.
        public static let notPowered = Code(rawValue: "notPowered")
        /// BlueZ is not on the bus.
        public static let bluezUnavailable = Code(rawValue: "bluezUnavailable")
        /// The call to BlueZ timed out.
        public static let timeout = Code(rawValue: "timeout")
        /// The bus policy refused the call.
        public static let accessDenied = Code(rawValue: "accessDenied")
        /// Anything else; the message keeps the original error name.
        public static let unknown = Code(rawValue: "unknown")

        /// Every code this version knows.
        public static let allCases: [Code] = [
            .invalid, .invalidValue, .noFreeInstance, .failed, .rejected, .alreadyRegistered, .notRegistered,
            .unknownName, .noAdapter, .notPowered, .bluezUnavailable, .timeout, .accessDenied, .unknown,
        ]

        /// The codes of failures that may pass: trying again later may succeed.
        static let transient: Set<Code> = [.noFreeInstance, .failed, .noAdapter, .notPowered, .bluezUnavailable, .timeout, .unknown]
    }

    /// What kind of failure this is.
    public var code: Code
    /// A message a person can act on.
    public var message: String

    /// An error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `unknownName`: nothing of that kind (an advertisement, unless told) has `name`.
    public static func unknownName(_ name: String, kind: String = "advertisement") -> PeripheralError {
        PeripheralError(.unknownName, "no \(kind) named \(quoted(name))")
    }

    /// `unknownName` for several names: the first three, and how many more.
    public static func unknownNames(_ names: [String]) -> PeripheralError {
        let shown = names.prefix(3).map(quoted).joined(separator: ", ")
        return PeripheralError(.unknownName, "no advertisement named \(shown)\(names.count > 3 ? " and \(names.count - 3) more" : "")")
    }

    /// `"text"` for a message, escaped; the start of it and its length when it is longer than
    /// any name or key (a megabyte sent by a caller is not sent back). See ``Untrusted``.
    public static func quoted(_ text: String) -> String {
        Untrusted.quoted(text, limit: text.unicodeScalars.count <= 64 ? 64 : 24)
    }

    /// Whether trying again later may succeed (as opposed to an advertisement that will be
    /// refused every time until it is changed).
    public var isTransient: Bool {
        Code.transient.contains(code)
    }
}

extension PeripheralError: CustomStringConvertible {
    /// The message.
    public var description: String { message }
}
