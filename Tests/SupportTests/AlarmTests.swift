import Support
import Testing

/// The one timer an owner keeps armed: a new timer only for an instant none is armed for.
@Suite("An alarm's armed instant")
struct AlarmTests {
    @Test("arming it for the instant it is armed for asks for no second timer")
    func sameInstant() {
        var alarm = Alarm<Int>()
        _ = alarm.arm(10)

        let again = alarm.arm(10)

        #expect(!again)
        #expect(alarm.at == 10)
    }

    @Test("arming it for another instant, earlier or later, asks for a timer for that one")
    func anotherInstant() {
        var alarm = Alarm<Int>()
        _ = alarm.arm(10)

        let earlier = alarm.arm(5)
        let later = alarm.arm(20)

        #expect(earlier && later)
        #expect(alarm.at == 20)
    }

    @Test("arming it for no instant disarms it, once")
    func disarm() {
        var alarm = Alarm<Int>()
        _ = alarm.arm(10)

        let first = alarm.arm(nil)
        let second = alarm.arm(nil)

        #expect(first && !second)
        #expect(alarm.at == nil)
    }

    @Test("the timer for the armed instant firing disarms it")
    func firedArmed() {
        var alarm = Alarm<Int>()
        _ = alarm.arm(10)

        let wasArmed = alarm.fired(10)

        #expect(wasArmed)
        #expect(alarm.at == nil)
    }

    @Test("a timer replaced since, firing late, leaves the armed one armed")
    func firedReplaced() {
        var alarm = Alarm<Int>()
        _ = alarm.arm(10)
        _ = alarm.arm(20)

        let wasArmed = alarm.fired(10)

        #expect(!wasArmed)
        #expect(alarm.at == 20)
    }
}
