/// An error from the advertising core or a `PeripheralManaging` implementation: a code a
/// program can switch on and a message a person can act on.
public struct PeripheralError: Error, Hashable, Sendable {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// An advertisement breaks a rule or does not fit; registering it would fail the same way.
        case invalidAdvertisement
        /// A value could not be parsed (a UUID, hex bytes, a URL for Eddystone).
        case invalidValue
        /// The adapter has no free advertising instance ("Maximum advertisements reached").
        case noFreeInstance
        /// BlueZ or the kernel refused for a reason that may pass (busy, failed to register).
        case failed
        /// BlueZ rejected the advertisement's properties ("Failed to parse advertisement").
        case rejected
        /// This advertisement is registered already.
        case alreadyRegistered
        /// No such advertisement is registered.
        case notRegistered
        /// No advertisement has that name.
        case unknownName
        /// No adapter that can advertise, or the named adapter is gone.
        case noAdapter
        /// The adapter is powered off.
        case notPowered
        /// BlueZ is not on the bus.
        case bluezUnavailable
        /// The call to BlueZ timed out.
        case timeout
        /// The bus policy refused the call.
        case accessDenied
        /// Anything else; the message keeps the original error name.
        case unknown
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

    /// `unknownName`: no advertisement has `name`.
    public static func unknownName(_ name: String) -> PeripheralError {
        PeripheralError(.unknownName, "no advertisement named \(quoted(name))")
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
        switch code {
        case .noFreeInstance, .failed, .noAdapter, .notPowered, .bluezUnavailable, .timeout, .unknown: true
        case .invalidAdvertisement, .invalidValue, .rejected, .alreadyRegistered, .notRegistered, .unknownName,
             .accessDenied: false
        }
    }
}

extension PeripheralError: CustomStringConvertible {
    /// The message.
    public var description: String { message }
}
