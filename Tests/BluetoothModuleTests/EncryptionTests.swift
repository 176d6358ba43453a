import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

@Suite("Encrypted BTHome through the module")
struct EncryptionTests {
    static let key = BTHome.Key(hex: "231d39c1d7cc1ab1aee224cd096db932")!
    static let hci0 = AdapterCapabilities(name: "hci0", address: "54:48:E6:8F:80:A5")
    static let address: [UInt8] = [0x54, 0x48, 0xE6, 0x8F, 0x80, 0xA5]

    static func sensor(temperature: Double) throws -> Advertisement {
        try BTHome(values: ["temperature": temperature], encryptionKey: key).advertisement()
    }

    /// The 0xFCD2 service data of `advertisement`, opened with the key and hci0's address.
    static func opened(_ advertisement: Advertisement?) -> [UInt8]? {
        advertisement?.serviceData.first.flatMap { BTHome.open($0.data, key: key, address: address) }
    }

    /// The counter in sealed service data (little endian, before the 4-byte tag).
    static func counter(_ advertisement: Advertisement?) -> [UInt8]? {
        advertisement?.serviceData.first.map { Array($0.data.dropLast(4).suffix(4)) }
    }

    @Test("an encrypted sensor goes to BlueZ sealed for the adapter's address with a fresh counter")
    func sealedOnRegistration() async throws {
        let h = await Harness(adapters: [Self.hci0])
        await h.module.configure(["kitchen": try Self.sensor(temperature: 21.5)])

        try await h.module.on("kitchen")

        let sent = h.mock.calls.started.first?.advertisement
        #expect(Self.opened(sent) == [0x41, 0x00, 0x00, 0x02, 0x66, 0x08])
        #expect(Self.counter(sent) == [1, 0, 0, 0])
        #expect(sent?.bthomeKey == nil)
        #expect(h.counters.nextCallCount == 1)
    }

    @Test("a change in place is sealed with the next counter")
    func nextCounterOnUpdate() async throws {
        let h = await Harness(adapters: [Self.hci0])
        h.mock.scriptUpdate(.always(.success(())))
        await h.module.configure(["kitchen": try Self.sensor(temperature: 21.5)])
        try await h.module.on("kitchen")

        try await h.module.update("kitchen", to: try Self.sensor(temperature: 22))

        let sent = h.mock.calls.updated.first?.advertisement
        #expect(Self.opened(sent) == [0x41, 0x00, 0x00, 0x02, 0x98, 0x08])
        #expect(Self.counter(sent) == [2, 0, 0, 0])
        #expect(h.mock.startAdvertisingCallCount == 1)
    }

    @Test("a change after another adapter appeared is still made in place, sealed for the adapter it is on")
    func changeAfterAdapterEvent() async throws {
        let h = await Harness(adapters: [Self.hci0])
        h.mock.scriptUpdate(.always(.success(())))
        await h.module.configure(["kitchen": try Self.sensor(temperature: 21.5)])
        try await h.module.on("kitchen")
        await h.module.handle(.adapterAdded("hci1"))

        try await h.module.update("kitchen", to: try Self.sensor(temperature: 22))

        #expect(h.mock.updateAdvertisementCallCount == 1)
        #expect(h.mock.startAdvertisingCallCount == 1)
        #expect(Self.opened(h.mock.calls.updated.first?.advertisement) == [0x41, 0x00, 0x00, 0x02, 0x98, 0x08])
    }

    @Test("an adapter whose address BlueZ did not report registers nothing and says why")
    func noAddress() async throws {
        let h = await Harness(adapters: [AdapterCapabilities(name: "hci0")])
        await h.module.configure(["kitchen": try Self.sensor(temperature: 21.5)])

        await #expect(throws: PeripheralError.self) { try await h.module.on("kitchen") }

        #expect(h.mock.startAdvertisingCallCount == 0)
        #expect(await h.status("kitchen")?.lastError?.message == "BlueZ did not report hci0's address, which encrypted BTHome needs")
    }

    @Test("a counter that cannot be kept registers nothing and says why")
    func counterFailure() async throws {
        let h = await Harness(adapters: [Self.hci0])
        h.counters.fail(with: PeripheralError(.failed, "cannot write /var/lib/bleadvd/x.counter"))
        await h.module.configure(["kitchen": try Self.sensor(temperature: 21.5)])

        await #expect(throws: PeripheralError.self) { try await h.module.on("kitchen") }

        #expect(h.mock.startAdvertisingCallCount == 0)
        #expect(await h.status("kitchen")?.lastError?.message == "cannot write /var/lib/bleadvd/x.counter")
    }

    @Test("an advertisement without a key is sent as it is and takes no counter")
    func plainUntouched() async throws {
        let h = await Harness(adapters: [Self.hci0])

        try await h.module.on("heart")

        #expect(h.mock.calls.started.first?.advertisement == Harness.heart)
        #expect(h.counters.nextCallCount == 0)
    }
}
