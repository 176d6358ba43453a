@testable import AdvertiserDaemon
import Peripheral
import Testing

/// Who may subscribe (`Subscribe`) next: at most four subscriptions a user, 32 in all, and
/// root's counted apart (#64 item 8: one member of group bleadvd took all 32 places).
@Suite("Subscriptions per user")
struct SubscribersTests {
    static let member: UInt32 = 1000

    @Test("a user's fifth subscription is refused, saying it is that user's limit; another user's is taken")
    func fifthOfOneUser() throws {
        var subscribers = Subscribers()
        for n in 1...4 { try subscribers.admit(":1.\(n)", uid: Self.member) }

        let refusal = #expect(throws: PeripheralError.self) { try subscribers.admit(":1.5", uid: Self.member) }
        try subscribers.admit(":1.6", uid: Self.member + 1)

        #expect(refusal?.message.contains("this user has 4 subscriptions already") == true)
        #expect(subscribers.contains(":1.6") && !subscribers.contains(":1.5"))
    }

    @Test("with all 32 places taken by other users, root still gets one")
    func rootAlwaysGetsOne() throws {
        var subscribers = Subscribers()
        for n in 0..<32 { try subscribers.admit(":1.\(n)", uid: 1000 + UInt32(n / 4)) }
        let full = #expect(throws: PeripheralError.self) { try subscribers.admit(":1.100", uid: 2000) }

        try subscribers.admit(":1.200", uid: 0)

        #expect(full?.message.contains("32 clients are subscribed already") == true)
        #expect(subscribers.contains(":1.200"))
    }

    @Test("a subscriber that left makes room for its user")
    func leavingMakesRoom() throws {
        var subscribers = Subscribers()
        for n in 1...4 { try subscribers.admit(":1.\(n)", uid: Self.member) }

        subscribers.remove(":1.2")
        try subscribers.admit(":1.5", uid: Self.member)

        #expect(subscribers.names.count == 4)
    }
}
