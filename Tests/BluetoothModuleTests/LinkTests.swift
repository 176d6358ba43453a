import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// A central's link takes advertising off air (the controller ends the set it came from; one
/// without extended advertising stops advertising altogether) until the link ends: the module
/// registers what was on air again beside the link, and says `paused` for what the stack refuses.
@Suite("Links")
struct LinkTests {
    static let phone = "AA:BB:CC:DD:EE:01"
    static let laptop = "AA:BB:CC:DD:EE:02"
    static let refused = PeripheralError(.failed, "Failed to register advertisement")
    static let again = RegistrationID("/ad/heart-again")

    /// A module with `heart` on air on hci0.
    static func onAir() async throws -> Harness {
        let h = await Harness()
        try await h.module.on("heart")
        return h
    }

    @Test("a central connecting on the adapter: each advertisement on air there is registered again beside the link")
    func linkRegistersAgain() async throws {
        let h = try await Self.onAir()
        h.mock.scriptStart(.always(.success(Self.again)))

        await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))

        #expect(h.mock.calls.stopped == [Harness.heartID])
        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Self.again, adapter: "hci0"))
    }

    @Test("a link on another adapter leaves the advertisements on hci0 alone")
    func linkElsewhereChangesNothing() async throws {
        let h = try await Self.onAir()

        await h.module.handle(.connected(central: Self.phone, adapter: "hci1"))

        #expect(h.mock.calls.stopped.isEmpty)
        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("a Connected signal repeated for a link already up registers nothing again")
    func repeatedConnectedIsOneLink() async throws {
        let h = try await Self.onAir()
        await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))

        await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))

        #expect(h.mock.startAdvertisingCallCount == 2)
    }

    @Test("refused beside the link: paused with the stack's reason, not retried on the clock")
    func refusedBesideTheLinkIsPaused() async throws {
        let h = try await Self.onAir()
        h.mock.scriptStart(.always(.failure(Self.refused)))

        await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))

        #expect(await h.status()?.phase == .paused(adapter: "hci0"))
        #expect(await h.status()?.lastError == Self.refused)
        #expect(await h.module.nextRetry == nil)
    }

    @Test("paused: registered again when the adapter's last central has left, not before")
    func pausedUntilTheLastCentralLeaves() async throws {
        let h = try await Self.onAir()
        await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))
        h.mock.scriptStart(.always(.failure(Self.refused)))
        await h.module.handle(.connected(central: Self.laptop, adapter: "hci0"))
        h.mock.scriptStart(.always(.success(Self.again)))

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        let oneLeft = await h.status()?.phase
        await h.module.handle(.disconnected(central: Self.laptop, adapter: "hci0"))

        #expect(oneLeft == .paused(adapter: "hci0"))
        #expect(await h.status()?.phase == .on(Self.again, adapter: "hci0"))
        #expect(await h.status()?.lastError == nil)
    }

    @Test("paused, then bluetoothd goes: it waits for BlueZ like the rest, and comes back with it")
    func pausedWaitsWhenBluezGoes() async throws {
        let h = try await Self.onAir()
        h.mock.scriptStart(.always(.failure(Self.refused)))
        await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))

        await h.module.handle(.bluezVanished())
        let whileGone = await h.status()?.phase
        h.mock.scriptStart(.always(.success(Self.again)))
        await h.module.handle(.bluezAppeared(StackGeneration(2, name: ":1.9")))

        #expect(whileGone == .waiting)
        #expect(await h.status()?.phase == .on(Self.again, adapter: "hci0"))
    }

    @Test("off while paused: off, and the link's end registers nothing")
    func offWhilePaused() async throws {
        let h = try await Self.onAir()
        h.mock.scriptStart(.always(.failure(Self.refused)))
        await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))

        try await h.module.off("heart")
        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))

        #expect(await h.status()?.phase == .off)
        #expect(h.mock.startAdvertisingCallCount == 2)
    }
}
