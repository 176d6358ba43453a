import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// Without extended advertising the kernel shows an adapter's advertisements in turn from a
/// timer, and a link that ends as a turn ends can leave the timer unarmed: the turns stop on one
/// advertisement. After a link there ends, the module sends one of its advertisements again,
/// unchanged, which arms the timer again.
@Suite("The kernel's turns after a link")
struct RotationTests {
    typealias Module = BluetoothModule<ManualClock>
    static let phone = "AA:BB:CC:DD:EE:01"
    static let laptop = "AA:BB:CC:DD:EE:02"
    static let doorID = RegistrationID("/ad/door")
    static let extended = AdapterCapabilities(name: "hci0", secondaryChannels: [.oneM, .twoM])

    /// A module with `names` on air on `adapter` (heart's id first, door's second), refreshes
    /// that succeed, and `centrals` connected there.
    static func linked(
        _ names: [String] = ["heart", "door"], adapter: AdapterCapabilities = Harness.hci0, centrals: [String] = [phone]
    ) async throws -> Harness {
        let h = await Harness(adapters: [adapter])
        h.mock.scriptStart(.sequence([.success(Harness.heartID), .success(doorID)]))
        h.mock.scriptRefresh(.always(.success(())))
        h.mock.scriptReregister(.always(.success(false)))
        await h.module.configure(["heart": Harness.heart, "door": Harness.door])
        for name in names { try await h.module.on(name) }
        for central in centrals { await h.module.handle(.connected(central: central, adapter: adapter.name)) }
        return h
    }

    @Test("a link that ends on an adapter without extended advertising: one advertisement on air there is sent again, rotationRestartDelay later")
    func linkEndRefreshesOne() async throws {
        let h = try await Self.linked()

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        await h.after(Module.rotationRestartDelay - .milliseconds(1))
        let before = h.mock.calls.refreshed
        await h.after(.milliseconds(1))

        #expect(before.isEmpty)
        #expect(h.mock.calls.refreshed == [Self.doorID])
    }

    @Test("links that end together cost one refresh, after the last of them")
    func linksEndingTogetherCostOne() async throws {
        let h = try await Self.linked(centrals: [Self.phone, Self.laptop])

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        await h.after(.milliseconds(300))
        await h.module.handle(.disconnected(central: Self.laptop, adapter: "hci0"))
        await h.after(Module.rotationRestartDelay - .milliseconds(1))
        let before = h.mock.calls.refreshed.count
        await h.after(.milliseconds(1))

        #expect(before == 0)
        #expect(h.mock.calls.refreshed.count == 1)
    }

    @Test("a central in range flooding short links costs one refresh, after its last link: each link's end moves the refresh on")
    func floodOfShortLinksCostsOne() async throws {
        let h = try await Self.linked(centrals: [])

        for _ in 0..<1_000 {
            await h.module.handle(.connected(central: Self.phone, adapter: "hci0"))
            await h.after(.milliseconds(100))
            await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        }
        let during = h.mock.calls.refreshed.count
        await h.after(Module.rotationRestartDelay)

        #expect(during == 0)
        #expect(h.mock.calls.refreshed.count == 1)
    }

    @Test("a link that ends while another stays up sends one again too: either can have stopped the turns")
    func linkEndBesideAnotherLinkRefreshes() async throws {
        let h = try await Self.linked(centrals: [Self.phone, Self.laptop])

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        await h.after(Module.rotationRestartDelay)

        #expect(h.mock.calls.refreshed.count == 1)
    }

    @Test("the refresh is checked as an update is: BlueZ 5.66 to 5.73 drop an advertisement whose refresh the kernel refuses")
    func refreshIsChecked() async throws {
        let h = try await Self.linked()
        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        await h.after(Module.rotationRestartDelay)

        await h.after(Module.updateCheckDelay)

        #expect(h.mock.calls.reregistered == [Self.doorID])
    }

    @Test("with extended advertising each advertisement has a set of its own: nothing is sent again")
    func extendedRefreshesNothing() async throws {
        let h = try await Self.linked(adapter: Self.extended)

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        await h.after(Module.rotationRestartDelay)

        #expect(h.mock.calls.refreshed.isEmpty)
    }

    @Test("one advertisement alone on air has no turns to stop: nothing is sent again")
    func oneAdvertisementRefreshesNothing() async throws {
        let h = try await Self.linked(["heart"])

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        await h.after(Module.rotationRestartDelay)

        #expect(h.mock.calls.refreshed.isEmpty)
    }

    @Test("a Disconnected signal for a link the module never saw sends nothing again")
    func unknownLinkRefreshesNothing() async throws {
        let h = try await Self.linked(centrals: [])

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        await h.after(Module.rotationRestartDelay)

        #expect(h.mock.calls.refreshed.isEmpty)
        #expect(await h.module.nextRetry == nil)
    }

    @Test("a refresh the stack refuses changes nothing the module holds: both stay on")
    func refusedRefreshKeepsBothOn() async throws {
        let h = try await Self.linked()
        h.mock.scriptRefresh(.always(.failure(PeripheralError(.notRegistered, "/ad/door is not registered"))))

        await h.module.handle(.disconnected(central: Self.phone, adapter: "hci0"))
        await h.after(Module.rotationRestartDelay)

        #expect(h.mock.calls.refreshed.count == 1)
        #expect(await h.status("heart")?.phase == .on(Harness.heartID, adapter: "hci0"))
        #expect(await h.status("door")?.phase == .on(Self.doorID, adapter: "hci0"))
    }
}
