/// Which signals a subscription receives. The connection adds the rule to the bus (`AddMatch`)
/// and also matches it locally, so each subscription sees only its own signals.
public struct DBusMatchRule: Sendable, Hashable {
    /// The sender: a unique name, or a well-known name whose current owner is tracked.
    public var sender: String?
    /// The object path the signal comes from.
    public var path: DBusObjectPath?
    /// The signal's interface.
    public var interface: String?
    /// The signal's name.
    public var member: String?
    /// The signal's first argument, when it is a string (e.g. a name in `NameOwnerChanged`).
    public var arg0: String?

    /// A rule; every field left out matches anything.
    public init(
        sender: String? = nil, path: DBusObjectPath? = nil, interface: String? = nil, member: String? = nil,
        arg0: String? = nil
    ) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The rule in the bus's text form, e.g. `type='signal',sender='org.bluez',member='Release'`.
    public var text: String {
        var parts = ["type='signal'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let path { parts.append("path='\(path.rawValue)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        if let arg0 { parts.append("arg0='\(arg0.replacingQuotes())'") }
        return parts.joined(separator: ",")
    }

    /// Checks every field before the rule is sent to the bus.
    func validate() throws(DBusError) {
        if let sender { try DBusName.validateBusName(sender) }
        if let interface { try DBusName.validateInterface(interface) }
        if let member { try DBusName.validateMember(member) }
        if let arg0, arg0.utf8.contains(0) { throw .invalidArgs("match rule arg0 contains a NUL character") }
    }

    /// Whether a signal matches. `senderOwner` is the unique name that currently owns
    /// `sender` when `sender` is a well-known name.
    func matches(_ message: DBusMessage, senderOwner: String?) -> Bool {
        guard matchesHeader(message, senderOwner: senderOwner) else { return false }
        if let arg0, message.body.first?.string != arg0 { return false }
        return true
    }

    /// Whether `message`'s header matches (all but `arg0`, which is in the body): whether a
    /// received signal is worth unpacking.
    func matchesHeader(_ message: DBusMessage, senderOwner: String?) -> Bool {
        guard message.kind == .signal else { return false }
        if let sender, message.sender != sender, message.sender == nil || message.sender != senderOwner { return false }
        if let path, message.path != path { return false }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        return true
    }

    /// Whether `sender` names a well-known name whose owner must be tracked to match locally.
    var needsOwnerTracking: Bool {
        guard let sender else { return false }
        return !sender.hasPrefix(":") && sender != DBusConnection.busName
    }
}

extension String {
    /// Escapes a value for a match rule: a quote becomes `'\''`.
    fileprivate func replacingQuotes() -> String {
        var out = ""
        for character in self {
            if character == "'" { out += "'\\''" } else { out.append(character) }
        }
        return out
    }
}
