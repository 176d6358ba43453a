import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// A central's link takes advertising off air: a controller with extended advertising ends the
/// set the link came from, and the kernel enables it again only when the link ends. Once the link
/// has settled, the module registers what was on air there again beside it, and says `paused`
/// for what the stack refuses. Without extended advertising the kernel brings advertising back
/// by itself.
@Suite("Links")
struct LinkTests {
    typealias Module = BluetoothModule<ManualClock>
    static let phone = "AA:BB:CC:DD:EE:01"
    static let laptop = "AA:BB:CC:DD:EE:02"
    static let refused = PeripheralError(.failed, "Failed to register advertisement")
    static let again = RegistrationID("/ad/heart-again")
    static let extended = AdapterCapabilities(name: "hci0", secondaryChannels: [.oneM, .twoM])

    /// A module with `heart` on air on hci0, a controller with extended advertising.
    static func onAir(adapter: AdapterCapabilities = extended) async throws -> Harness {
        let h = await Harness(adapters: [adapter])
        try await h.module.on("heart")
        return h
    }

    /// `central` connects on `adapter` and the link settles.
    static func settledLink(_ h: Harness, _ central: String = phone, on adapter: String = "hci0") async {
        await h.module.handle(.connected(central: central, adapter: adapter))
        await h.after(Module.linkSettle)
    }

    @Test("a link that has settled on a controller with extended advertising: what is on air there is registered again beside it")
    func settledLinkRegistersAgain() async throws {
        let h = try await Self.onAir()
        h.mock.scriptStart(.always(.success(Self.again)))

        await Self.settledLink(h)

        #expect(h.mock.calls.stopped == [Harness.heartID])
        #expect(h.mock.startAdvertisingCallCount == 2)
        #expect(await h.status()?.phase == .on(Self.again, adapter: "hci0"))
    }

    @Test("a link that has not settled yet leaves the advertisement alone")
    func newLinkIsLeftToSettle() async throws {
        let h = try await Self.onAir()

        await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))
        await h.after(Module.linkSettle - .milliseconds(1))

        #expect(h.mock.calls.stopped.isEmpty)
        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("a link over before it settled registers nothing again: the kernel enables the set at the disconnect")
    func shortLinkRegistersNothing() async throws {
        let h = try await Self.onAir()
        await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        await h.after(Module.linkSettle)

        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(await h.module.nextRetry == nil)
    }

    @Test("without extended advertising the kernel enables advertising again by itself: a settled link registers nothing")
    func legacyControllerRegistersNothing() async throws {
        let h = try await Self.onAir(adapter: Harness.hci0)

        await Self.settledLink(h)

        #expect(h.mock.calls.stopped.isEmpty)
        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("a central flooding short links costs no registration at all")
    func floodOfShortLinksCostsNothing() async throws {
        let h = try await Self.onAir()

        for _ in 0..<1_000 {
            await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))
            await h.after(.milliseconds(100))
            await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        }

        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(h.mock.calls.stopped.isEmpty)
    }

    @Test("a central holding link after link for a minute costs one registration per relinkSpacing at most")
    func linksBackToBackAreSpaced() async throws {
        let h = try await Self.onAir()
        let cycle = Module.linkSettle + .milliseconds(500)
        var elapsed = Duration.zero

        while elapsed < .seconds(60) {
            await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))
            await h.after(cycle)
            await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
            elapsed += cycle
        }

        let spaced = Int(Duration.seconds(60) / Module.relinkSpacing) + 1
        #expect(h.mock.startAdvertisingCallCount - 1 <= spaced)
        #expect(h.mock.startAdvertisingCallCount - 1 >= 2)
    }

    @Test("a link on another adapter leaves the advertisements on hci0 alone")
    func linkElsewhereChangesNothing() async throws {
        let h = try await Self.onAir()

        await Self.settledLink(h, on: "hci1")

        #expect(h.mock.calls.stopped.isEmpty)
        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("a Connected signal repeated for a link already up registers nothing again")
    func repeatedConnectedIsOneLink() async throws {
        let h = try await Self.onAir()
        await Self.settledLink(h)

        await Self.settledLink(h)

        #expect(h.mock.startAdvertisingCallCount == 2)
    }

    @Test("refused beside the link: paused with the stack's reason, not retried on the clock")
    func refusedBesideTheLinkIsPaused() async throws {
        let h = try await Self.onAir()
        h.mock.scriptStart(.always(.failure(Self.refused)))

        await Self.settledLink(h)

        #expect(await h.status()?.phase == .paused(adapter: "hci0"))
        #expect(await h.status()?.lastError == Self.refused)
        #expect(await h.module.nextRetry == nil)
    }

    @Test("paused: registered again when the adapter's last central has left, not before")
    func pausedUntilTheLastCentralLeaves() async throws {
        let h = try await Self.onAir()
        await Self.settledLink(h)
        h.mock.scriptStart(.always(.failure(Self.refused)))
        await h.module.handle(.connected(central: Self.laptop, adapter: "hci0"))
        await h.after(Module.relinkSpacing)
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
        await Self.settledLink(h)

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
        await Self.settledLink(h)

        try await h.module.off("heart")
        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))

        #expect(await h.status()?.phase == .off)
        #expect(h.mock.startAdvertisingCallCount == 2)
    }

    // Outside the link's settle (an `on`, a reload, a rotation's turn) a refusal beside the link
    // was retried every 4 s for the link's life, a warning a minute (a reviewer's finding, #80).

    @Test("turned on while a central is connected and refused beside the link: paused, not retried every few seconds")
    func onBesideTheLinkRefusedIsPaused() async throws {
        let h = try await Self.onAir()
        try await h.module.off("heart")
        await Self.settledLink(h)
        h.mock.scriptStart(.always(.failure(Self.refused)))

        try? await h.module.on("heart")

        #expect(await h.status()?.phase == .paused(adapter: "hci0"))
        #expect(await h.module.nextRetry == nil)
    }

    @Test("turned on beside a link and paused: registered again as the link ends")
    func onBesideTheLinkBackAtItsEnd() async throws {
        let h = try await Self.onAir()
        try await h.module.off("heart")
        await Self.settledLink(h)
        h.mock.scriptStart(.always(.failure(Self.refused)))
        try? await h.module.on("heart")
        h.mock.scriptStart(.always(.success(Self.again)))

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))

        #expect(await h.status()?.phase == .on(Self.again, adapter: "hci0"))
    }

    @Test("BlueZ not answering beside a link is retried as ever: only the stack's refusal pauses")
    func timeoutBesideTheLinkIsRetried() async throws {
        let h = try await Self.onAir()
        try await h.module.off("heart")
        await Self.settledLink(h)
        h.mock.scriptStart(.always(.failure(PeripheralError(.timeout, "BlueZ did not answer in time"))))

        try? await h.module.on("heart")

        guard case .retrying? = await h.status()?.phase else {
            Issue.record("not retrying: \(String(describing: await h.status()?.phase))")
            return
        }
    }

    @Test("without extended advertising a refusal beside a link is retried as ever")
    func legacyRefusalBesideTheLinkIsRetried() async throws {
        let h = try await Self.onAir(adapter: Harness.hci0)
        try await h.module.off("heart")
        await Self.settledLink(h)
        h.mock.scriptStart(.always(.failure(Self.refused)))

        try? await h.module.on("heart")

        guard case .retrying? = await h.status()?.phase else {
            Issue.record("not retrying: \(String(describing: await h.status()?.phase))")
            return
        }
    }
}
