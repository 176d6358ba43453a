/// Pairing: how a central bonds with this peripheral, so that the characteristics whose
/// ``GATTSecurity`` asks for an encrypted or authenticated link open to it.
///
/// The stack does the cryptography (SMP, in the kernel); the domain decides whether a central
/// may pair now and what a person must do for it: nothing (just works), type the code this
/// device shows into the central (passkey), or confirm that both show the same code (numeric
/// comparison). A ``PairingDecider`` answers each request the stack's agent receives.

/// The method centrals pair with, as the stack's agent announces it (BlueZ's agent capability).
public enum PairingMethod: String, Hashable, Sendable, CaseIterable {
    /// Encryption without MITM protection: any central in range while a window is open can bond.
    case justWorks = "just-works"
    /// This device shows a 6-digit code that the person types into the central: MITM protection.
    case passkey
    /// Both sides show a 6-digit code and the person confirms here that they match (LE Secure
    /// Connections with a central that shows it; otherwise as ``passkey``): MITM protection.
    case numericComparison = "numeric-comparison"
}

/// A request the stack's pairing agent received for one central.
public struct PairingRequest: Hashable, Sendable, CustomStringConvertible {
    /// What the stack asks.
    public enum Kind: Hashable, Sendable {
        /// May this central pair without a code (just works)?
        case authorize
        /// The code the central's user must type; shown, not asked (the stack cannot be told no).
        case passkey(UInt32)
        /// Do both sides show this code? (numeric comparison)
        case confirm(UInt32)
    }

    /// The central's address (`AA:BB:CC:DD:EE:FF`); empty when the stack did not say.
    public var central: String
    /// What is asked.
    public var kind: Kind

    /// A request.
    public init(central: String, _ kind: Kind) {
        self.central = central
        self.kind = kind
    }

    /// The code as people read it: six digits, leading zeros kept.
    public static func code(_ passkey: UInt32) -> String {
        let digits = String(passkey % 1_000_000)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// The code this request shows, if it has one.
    public var code: String? {
        switch kind {
        case .authorize: nil
        case .passkey(let passkey), .confirm(let passkey): Self.code(passkey)
        }
    }

    /// The method the request belongs to.
    public var method: PairingMethod {
        switch kind {
        case .authorize: .justWorks
        case .passkey: .passkey
        case .confirm: .numericComparison
        }
    }

    /// What it asks, for logs (without the code: whoever shows it decides where it goes).
    public var description: String {
        "\(Central.named(central)) asks to pair (\(method.rawValue))"
    }
}

/// Decides the requests of the stack's pairing agent: whether a pairing window is open, how
/// many attempts it allows, what the person confirmed.
public protocol PairingDecider: Sendable {
    /// Whether the stack may go on with `request`. For ``PairingRequest/Kind/passkey(_:)``
    /// the answer is not asked for (the code is shown, and the stack pairs when the central
    /// types it): the decider shows it, or keeps it to itself outside a window.
    func decide(_ request: PairingRequest) async -> Bool

    /// The stack gave up on the request it asked last (the central left, the time ran out):
    /// a pending decision is moot.
    func cancel() async
}

/// A central this peripheral is bonded with: it may use encrypted characteristics without
/// pairing again.
public struct Bond: Hashable, Sendable, Comparable {
    /// Its address (`AA:BB:CC:DD:EE:FF`).
    public var central: String
    /// Its name, when it gave one.
    public var name: String?

    /// A bond.
    public init(central: String, name: String? = nil) {
        self.central = central
        self.name = name
    }

    /// By address.
    public static func < (lhs: Bond, rhs: Bond) -> Bool { lhs.central < rhs.central }

    /// Whether `text` is a Bluetooth address as the stack writes it (six hex pairs, colons).
    public static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
    }

    /// The one line that refuses `text` as an address (escaped, bounded); nil when it is one.
    public static func refusal(ofAddress text: String) -> String? {
        isAddress(text) ? nil : "\(PeripheralError.quoted(text)) is not a Bluetooth address (expected e.g. AA:BB:CC:DD:EE:FF)"
    }
}
