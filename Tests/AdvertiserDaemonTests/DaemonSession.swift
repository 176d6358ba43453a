import AdvertiserConfig
import AdvertiserDaemon
import DBus
import Foundation
import Logging
import Peripheral
import PeripheralMocks
import TestSupport

/// The daemon in this process over the counting mock, owning its name on a private bus; the
/// real `bleadvctl` binary talks to it there.
struct DaemonSession {
    static let config = """
        [advertisement.heart]
        local_name = "Thermo-1"
        service_uuids = ["180D"]

        [advertisement.door]
        enabled = false
        type = "broadcast"
        manufacturer_data = { "0xFFFF" = "0102" }
        """

    let bus: PrivateBus
    let mock = MockPeripheralManager()
    let clock = ManualClock()
    let connection: DBusConnection
    let daemon: Daemon<ManualClock>
    let configPath: String

    /// A started daemon; `heart` is on air (enabled), `door` is off.
    init(config: String = Self.config, bus: PrivateBus? = nil) async throws {
        self.bus = try bus ?? PrivateBus()
        configPath = self.bus.folder.appendingPathComponent("bleadvd.toml").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        mock.scriptAdapters(.always(.success([AdapterCapabilities(name: "hci0")])))
        mock.scriptStart(.always(.success(AdvertisementID("/org/bleadvd/advertisement/1"))))
        mock.scriptStop(.always(.success(())))
        connection = try await DBusConnection.connect(to: .address(self.bus.address))
        daemon = Daemon(
            config: try ConfigParser.load(path: configPath), configPath: configPath, manager: mock,
            connection: connection, clock: clock, logger: Logger(label: "test"))
        try await daemon.start()
    }

    /// Runs `bleadvctl` against the daemon's bus.
    func ctl(_ arguments: String...) async throws -> ProgramResult {
        try await runProgram(product("bleadvctl"), arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
    }

    /// Replaces the config file (for reload).
    func writeConfig(_ text: String) throws {
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
    }
}
