#if canImport(Glibc)
import Glibc
#endif

/// Who on this machine may see the values of secured characteristics (whose `security` is not
/// none: a central must be bonded, or bonded with a code, to read or write them): root, the
/// user bleadvd runs as, and the members of group `bleadvd` — those the bus policy lets drive
/// bleadvd. Any other local user sees what an unbonded central sees of them: nothing.
package enum LocalTrust {
    /// The group whose members are trusted.
    package static let groupName = "bleadvd"
    /// The user bleadvd runs as under its unit (the package's sysusers).
    package static let userName = "bleadvd"

    /// Whether the user `uid` is trusted: root, this process's user, or a member of ``groupName``
    /// (its primary group or a supplementary one, as the system's user database says, as
    /// dbus-daemon reads it for the policy's `group=` rules). A user or group the database
    /// does not know is not trusted.
    package static func isTrusted(uid: UInt32) -> Bool {
        if uid == 0 || uid == geteuid() { return true }
        guard let trusted = groupID(groupName), let (name, primary) = user(uid) else { return false }
        if primary == trusted { return true }
        var count: Int32 = 64
        while true {
            var groups = [gid_t](repeating: 0, count: Int(count))
            let asked = count
            if getgrouplist(name, primary, &groups, &count) >= 0 {
                return groups.prefix(Int(count)).contains(trusted)
            }
            // -1 with count raised to what is needed; give up past a sane size.
            guard count > asked, count <= 65_536 else { return false }
        }
    }

    private static func groupID(_ name: String) -> gid_t? {
        var entry = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }

    private static func user(_ uid: UInt32) -> (name: String, primary: gid_t)? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return nil }
        return (String(cString: name), entry.pw_gid)
    }
}
