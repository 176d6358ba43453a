import BluetoothModule
import Peripheral
import PeripheralMocks
import Testing

/// The example of the PeripheralMocks article (Sources/PeripheralMocks/PeripheralMocks.docc),
/// as it is printed there: if it stops passing, the article is wrong.
@Suite("The PeripheralMocks article's example")
struct ArticleExampleTests {
    @Test("a full adapter is retried after a second")
    func fullAdapterIsRetried() async {
        let mock = MockPeripheralManager()
        let clock = ManualClock()
        mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0")])))
        mock.scriptStart(.sequence([
            .failure(PeripheralError(.noFreeInstance, "Maximum advertisements reached")),
            .success(RegistrationID("/ad/1")),
        ]))
        let module = BluetoothModule(manager: mock, clock: clock)
        await module.configure(["beacon": Advertisement(localName: "B")])
        _ = try? await module.on("beacon")

        clock.advance(by: .seconds(1))
        await module.retryDue()

        #expect(mock.startAdvertisingCallCount == 2)
        #expect(await module.status()[.advertisement("beacon")]?.phase == .on(RegistrationID("/ad/1"), adapter: "hci0"))
    }
}
