import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// BlueZ before 5.77, started without -E, accepts intervals and TX power and does not act on
/// them: the status says which fields, so nobody believes an interval that is not on air.
@Suite("Fields bluetoothd accepts but ignores")
struct IgnoredFieldsTests {
    static let paced: Advertisement = {
        var advertisement = Harness.heart
        advertisement.minInterval = 100
        advertisement.maxInterval = 150
        return advertisement
    }()

    @Test("on an adapter whose BlueZ does not act on them, the status names the interval fields")
    func intervalsNamedWhereIgnored() async throws {
        let h = await Harness(adapters: [AdapterCapabilities(name: "hci0", actsOnParameters: false)])
        await h.module.configure(["heart": Self.paced])

        try await h.module.on("heart")

        #expect(await h.status()?.ignored == ["min_interval_ms", "max_interval_ms"])
    }

    @Test("on an adapter whose BlueZ acts on them, nothing is named")
    func nothingNamedWhereActedOn() async throws {
        let h = await Harness(adapters: [AdapterCapabilities(name: "hci0", actsOnParameters: true)])
        await h.module.configure(["heart": Self.paced])

        try await h.module.on("heart")

        #expect(await h.status()?.ignored == [])
    }

    @Test("an advertisement without intervals or TX power has nothing to ignore, wherever it is")
    func plainAdvertisementIgnoresNothing() async throws {
        let h = await Harness(adapters: [AdapterCapabilities(name: "hci0", actsOnParameters: false)])

        try await h.module.on("heart")

        #expect(await h.status()?.ignored == [])
    }
}
