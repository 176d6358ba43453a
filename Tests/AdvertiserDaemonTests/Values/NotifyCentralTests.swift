import AdvertiserControl
import AdvertiserDaemon
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// `bleadvctl set --central` (`Notify`): one subscribed central alone is notified, the
/// characteristic's value stays (#81 item 1), over the mock.
@Suite("notifying one central", .timeLimit(.minutes(3)))
struct NotifyCentralTests {
    static let brightness = GATTCharacteristicID(service: "lamp", characteristic: "brightness")
    static let phone = "AA:BB:CC:DD:EE:01"

    func session(updateValue: MockPeripheralManager.Script<Void> = .always(.success(()))) async throws -> DaemonSession {
        try await DaemonSession(
            onDBus: true, config: ServiceTests.config, users: [":1.7": 0]
        ) { mock in
            mock.scriptRegisterApplication(.always(.success(ServiceTests.app)))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptAgent()
            mock.scriptUpdateValue(updateValue)
        }
    }

    @Test("set --central notifies that central alone, and the characteristic's value stays")
    func notifiesOneCentral() async throws {
        let session = try await session()

        let result = try await session.ctl("set", "lamp", "brightness=75", "--central", "aa:bb:cc:dd:ee:01")

        #expect(result.status == 0, "\(result.errors)")
        #expect(session.mock.calls.updatedValues.map(\.value) == [[75]])
        #expect(session.mock.calls.updatedValues.map(\.characteristic) == [Self.brightness])
        #expect(session.mock.calls.notifiedCentrals == [Self.phone])
        #expect(await session.daemon.advertising.status()["lamp"]?.values["brightness"] == "10")
    }

    @Test("a central BlueZ's side says is not subscribed is refused with exit 2 and its reason")
    func unsubscribedCentralRefused() async throws {
        let session = try await session(updateValue: .always(.failure(PeripheralError(.unknownName, "AA:BB:CC:DD:EE:01 is not subscribed to lamp.brightness"))))

        let result = try await session.ctl("set", "lamp", "brightness=75", "--central", Self.phone)

        #expect(result.status == 2)
        #expect(result.errors.contains("is not subscribed to lamp.brightness"), "\(result.errors)")
    }

    @Test("where the stack notifies every subscriber alike, the refusal exits 1 with its reason: the operation failed, not its usage")
    func stackRefusalExitsOne() async throws {
        let session = try await session(updateValue: .always(.failure(PeripheralError(.rejected, "lamp.brightness cannot be notified to AA:BB:CC:DD:EE:01 alone"))))

        let result = try await session.ctl("set", "lamp", "brightness=75", "--central", Self.phone)

        #expect(result.status == 1)
        #expect(result.errors.contains("cannot be notified to AA:BB:CC:DD:EE:01 alone"), "\(result.errors)")
    }

    @Test("a characteristic that does not notify is refused, and nothing is sent")
    func silentCharacteristicRefused() async throws {
        let session = try await session()

        let result = try await session.ctl("set", "lamp", "label=sofa", "--central", Self.phone)

        #expect(result.status == 2)
        #expect(result.errors.contains("lamp.label does not notify"), "\(result.errors)")
        #expect(session.mock.calls.updatedValues.isEmpty)
    }

    @Test("two characteristics in one call are refused before anything is sent: one central, one characteristic a call")
    func twoValuesRefused() async throws {
        let session = try await session()

        let result = try await session.ctl("set", "lamp", "brightness=75", "label=sofa", "--central", Self.phone)

        #expect(result.status == 2)
        #expect(result.errors.contains("2 values given; one central is notified of one characteristic a call"), "\(result.errors)")
        #expect(session.mock.calls.updatedValues.isEmpty)
    }

    @Test("an advertisement is refused: a central alone is notified of a service's characteristics")
    func advertisementRefused() async throws {
        let session = try await session()

        let result = try await session.ctl("set", "heart", "temperature=21.5", "--central", Self.phone)

        #expect(result.status == 2)
        #expect(result.errors.contains("heart is an advertisement"), "\(result.errors)")
    }

    @Test("a value that does not fit is refused as set refuses it, and nothing is sent")
    func misfitRefused() async throws {
        let session = try await session()

        let result = try await session.ctl("set", "lamp", "brightness=300", "--central", Self.phone)

        #expect(result.status == 2)
        #expect(session.mock.calls.updatedValues.isEmpty)
    }

    @Test("an address that is none is refused by bleadvctl before the daemon is asked")
    func notAnAddressRefused() async throws {
        let session = try await session()

        let result = try await session.ctl("set", "lamp", "brightness=75", "--central", "phone\u{1b}[31m")

        #expect(result.status == 2)
        #expect(!result.errors.contains("\u{1b}"))
        #expect(session.mock.calls.updatedValues.isEmpty)
    }
}
