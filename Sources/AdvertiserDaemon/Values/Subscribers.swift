import Peripheral

/// The clients subscribed with `Subscribe` (each a unique bus name, with the user it runs as),
/// and who may subscribe next. Each subscriber costs a signal per event and a match rule on the
/// bus, so there are at most ``most`` of them, and at most ``perUser`` of any one user: a member
/// of group bleadvd cannot take every place. Root's own (``perUser`` at most) are counted apart:
/// an administrator's `bleadvctl watch` always gets one.
package struct Subscribers: Sendable {
    /// The most subscribers at once, root's apart.
    package static var most: Int { 32 }
    /// The most subscribers of one user at once.
    package static var perUser: Int { 4 }

    /// Each subscriber's user, by bus name.
    private(set) var users: [String: UInt32] = [:]

    /// The subscribers' bus names.
    var names: Dictionary<String, UInt32>.Keys { users.keys }

    func contains(_ name: String) -> Bool { users[name] != nil }

    /// Takes `name`, of user `uid`, unless its user or everyone has all the places it may.
    /// - Throws: `failed`, saying which limit it met.
    mutating func admit(_ name: String, uid: UInt32) throws(PeripheralError) {
        guard users[name] == nil else { return }
        guard users.values.count(where: { $0 == uid }) < Self.perUser else {
            throw PeripheralError(.failed, "this user has \(Self.perUser) subscriptions already (bleadvctl watch); one of them must end first")
        }
        guard uid == 0 || users.values.count(where: { $0 != 0 }) < Self.most else {
            throw PeripheralError(.failed, "\(Self.most) clients are subscribed already (bleadvctl watch); one must end first")
        }
        users[name] = uid
    }

    /// `name` left the bus.
    mutating func remove(_ name: String) {
        users[name] = nil
    }
}
