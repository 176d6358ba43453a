import BluetoothModule
import Peripheral
import PeripheralMocks
import TestSupport

/// A module over a mock with one powered adapter, hci0, and registrations that succeed.
struct Harness {
    static let heart = Advertisement(kind: .peripheral, serviceUUIDs: [BluetoothUUID(0x180D)], localName: "Thermo-1")
    static let door = Advertisement(kind: .broadcast, manufacturerData: [.init(companyID: 0xFFFF, data: [1, 2])])
    static let heartID = RegistrationID("/ad/heart")
    static let hci0 = AdapterCapabilities(name: "hci0")

    let mock = MockPeripheralManager()
    let clock = ManualClock()
    let counters = MockCounters()
    let module: BluetoothModule<ManualClock>

    init(adapter: String? = nil, powerOn: Bool = true, adapters: [AdapterCapabilities] = [hci0], logs: LogLines = LogLines()) async {
        mock.scriptAdapters(.always(.success(adapters)))
        mock.scriptStart(.always(.success(Self.heartID)))
        mock.scriptStop(.always(.success(())))
        // The stack agrees with whatever is held: the audit finds nothing (AuditTests script it).
        mock.scriptAudit(.always(.success([])))
        module = BluetoothModule(manager: mock, clock: clock, adapter: adapter, powerOn: powerOn, counters: counters, logger: logs.logger())
        await module.configure(["heart": Self.heart])
    }

    /// Time passes: the clock advances by `duration` and the module does what came due.
    func after(_ duration: Duration) async {
        clock.advance(by: duration)
        await module.retryDue()
    }

    func status(_ name: String = "heart") async -> BluetoothModule<ManualClock>.Status? {
        await module.status()[.advertisement(name)]
    }
}
