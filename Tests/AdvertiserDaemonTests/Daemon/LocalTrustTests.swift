@testable import AdvertiserDaemon
import Glibc
import Testing

/// Who on the machine may see secured values: root, bleadvd's own user, group bleadvd. (A
/// member of the real group is tested in the systemd test bed: this machine need not have it.)
@Suite("Local users bleadvd trusts with secured values")
struct LocalTrustTests {
    @Test("root is trusted")
    func rootTrusted() {
        #expect(LocalTrust.isTrusted(uid: 0))
    }

    @Test("a user the user database does not know is not trusted")
    func unknownUserNotTrusted() {
        #expect(getpwuid(3_999_999) == nil)

        #expect(!LocalTrust.isTrusted(uid: 3_999_999))
    }

    @Test("user nobody, in no group bleadvd, is not trusted")
    func nobodyNotTrusted() throws {
        let nobody = try #require(getpwnam("nobody")).pointee
        let group = getgrnam(LocalTrust.groupName)
        try #require(group == nil || !Self.members(group!.pointee).contains("nobody"), "this machine put nobody in group bleadvd")

        #expect(!LocalTrust.isTrusted(uid: nobody.pw_uid))
    }

    static func members(_ group: group) -> [String] {
        var names: [String] = []
        var member = group.gr_mem
        while let name = member?.pointee {
            names.append(String(cString: name))
            member = member?.advanced(by: 1)
        }
        return names
    }
}
