import DBus
import Foundation
import Peripheral
import PeripheralBlueZ
import TestSupport
import Testing

/// Whether bluetoothd answers, as the manager's own record of its calls says it: what the
/// control API's `Stack` reports, and the journal's line while a call waits (#81 item 3).
@Suite("BlueZPeripheralManager's record of the calls bluetoothd has not answered")
struct BlueZUnansweredTests {
    @Test("while bluetoothd answers, no call is unanswered")
    func answering() async throws {
        let session = try await StandInSession()

        _ = try await session.manager.bonds(adapter: "hci0")
        try await Task.sleep(for: .milliseconds(600))  // past the half second a call counts from

        #expect(await session.manager.unanswered() == nil)
    }

    @Test("a call bluetoothd has not answered for half a second is named, with the time it was sent")
    func unansweredCall() async throws {
        // The call's timeout is past the wait's guard: what the wait sees is the call waiting,
        // never one that timed out (which is also recorded: the test after next).
        let session = try await StandInSession(callTimeout: .seconds(120))
        try await session.control("Hang")
        let before = WallClock.now

        let pending = Task { try await session.manager.bonds(adapter: "hci0") }
        defer { pending.cancel() }

        var unanswered: UnansweredCall?
        try await eventually("the call is unanswered") {
            unanswered = await session.manager.unanswered()
            return unanswered != nil
        }
        let silent = try #require(unanswered)
        #expect(silent.call == "GetManagedObjects")
        #expect(silent.sentAt >= before && silent.sentAt <= WallClock.now)
        #expect(silent.waited >= .milliseconds(500))
    }

    @Test("the journal says which call waits for bluetoothd while it waits, not only once it is answered")
    func saidWhileWaiting() async throws {
        let lines = LogLines()
        let session = try await StandInSession(callTimeout: .seconds(120), logger: lines.logger())
        try await session.control("Hang")

        let pending = Task { try await session.manager.bonds(adapter: "hci0") }
        defer { pending.cancel() }

        try await eventually("the journal says the call waits") {
            lines.all.contains { $0.hasPrefix("notice: still waiting for bluetoothd to answer GetManagedObjects on / since ") }
        }
        let said = try #require(lines.all.first { $0.hasPrefix("notice: still waiting") })
        #expect(said.range(of: #"since \d\d:\d\d:\d\d$"#, options: .regularExpression) != nil)
    }

    @Test("a call bluetoothd let time out still says since when it has been silent, though nothing waits any more")
    func silentAfterTimeout() async throws {
        let session = try await StandInSession(callTimeout: .seconds(1))
        try await session.control("Hang")
        let before = WallClock.now

        await #expect(throws: PeripheralError.self) { try await session.manager.bonds(adapter: "hci0") }
        let timedOut = WallClock.now
        let silent = try #require(await session.manager.unanswered())

        #expect(silent.call == "GetManagedObjects")
        // The call that timed out, sent a second (the call timeout) before it failed: not a later one.
        #expect(silent.sentAt >= before && silent.sentAt <= timedOut - 0.9)
        #expect(silent.waited >= .seconds(1))
    }

    @Test("once bluetoothd answers again, the silence ends without a call of bleadvd's own")
    func silenceEndsWhenAnswered() async throws {
        let session = try await Self.timedOut(callTimeout: .seconds(1))
        try #require(await session.manager.unanswered() != nil)

        try await session.control("Answer")

        try await eventually("bluetoothd is heard again") {
            await session.manager.unanswered() == nil
        }
    }

    @Test("while bluetoothd is silent, bleadvd asks it once and waits, not once every timeout")
    func oneProbe() async throws {
        let session = try await Self.timedOut(callTimeout: .milliseconds(50))

        try await Task.sleep(for: .seconds(1))  // 20 timeouts

        let asked = try await session.calls().filter { $0 == "no reply to GetManagedObjects" }
        #expect(asked.count == 2)  // the call that timed out, and the probe
        #expect(await session.manager.unanswered() != nil)
    }

    @Test("the bus refusing calls past its limit while bluetoothd is silent does not end the silence, nor move its time")
    func busLimitIsNoAnswer() async throws {
        let session = try await Self.timedOut(callTimeout: .milliseconds(50))
        try await Task.sleep(for: .milliseconds(600))  // past the half second a call counts from
        let silentSince = try #require(await session.manager.unanswered()).sentAt

        // dbus-daemon keeps each call libdbus gave up on as waiting for its reply: past its
        // limit (128 by default) it refuses the next at once, in bluetoothd's place. A probe
        // sent every timeout reached it alone within 7 s of 50-ms timeouts, and its refusal
        // ended the silence (a88c661, the first review's finding).
        var refusal: String?
        for _ in 0..<200 where refusal == nil {
            do { _ = try await session.manager.bonds(adapter: "hci0") } catch where "\(error)".contains("LimitsExceeded") { refusal = "\(error)" } catch {}
        }

        #expect(refusal != nil)
        #expect(await session.manager.unanswered()?.sentAt == silentSince)
    }

    @Test("an answer to another call ends the silence and gives the probe up: nothing is said to wait")
    func answerGivesProbeUp() async throws {
        let session = try await Self.timedOut(callTimeout: .milliseconds(50))
        try await Task.sleep(for: .milliseconds(600))
        try #require(await session.manager.unanswered() != nil)

        // The hung stand-in still answers a property's change, and keeps the probe's call.
        try await session.manager.setPairable(true, adapter: "hci0")
        try await Task.sleep(for: .milliseconds(600))  // past the half second a call counts from

        #expect(await session.manager.unanswered() == nil)
    }

    /// A session whose stand-in answers nothing (`Hang`), after one call to it timed out.
    static func timedOut(callTimeout: Duration) async throws -> StandInSession {
        let session = try await StandInSession(callTimeout: callTimeout)
        try await session.control("Hang")
        await #expect(throws: PeripheralError.self) { try await session.manager.bonds(adapter: "hci0") }
        return session
    }
}
