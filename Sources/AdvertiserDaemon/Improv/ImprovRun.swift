#if canImport(Glibc)
import Glibc
#endif
import AdvertiserConfig
import AdvertiserControl
import BluetoothModule
import Logging
package import Peripheral
import Support

/// What joins a Wi-Fi network for Improv: ``HelperJoiner`` (NetworkManager through the join
/// helper), ``NetworkManagerJoiner`` (bleadvd run as root), or ``ProgramJoiner`` (the config's
/// program).
package protocol NetworkJoining: Sendable {
    /// Joins the network and returns the address it got (nil when it cannot tell).
    /// - Throws: when it could not be joined (a wrong password, no such network, time out).
    func join(_ credentials: Improv.Credentials) async throws -> String?
    /// The Wi-Fi networks in range, strongest first.
    /// - Throws: when they cannot be listed.
    func networks() async throws -> [Improv.Network]
    /// Whether this machine's Wi-Fi is connected, and its changes from then on; nil when the
    /// joiner cannot tell.
    /// - Throws: when it could not be asked.
    func wifi() async throws -> WifiWatch?
}

/// Whether this machine's Wi-Fi is connected now, and whenever that changes.
package struct WifiWatch: Sendable {
    /// Whether it is connected now.
    package var connected: Bool
    /// Each change from then on: true when it connected, false when it is no longer.
    package var changes: AsyncStream<Bool>

    package init(connected: Bool, changes: AsyncStream<Bool>) {
        self.connected = connected
        self.changes = changes
    }
}

/// Improv as the daemon runs it: the state machine (with its configuration) and the frames
/// centrals are writing.
struct ImprovRun<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    var session: ImprovSession<Instant>
    var frames = ImprovFrames<Instant>()
    /// The instant the partial frames' timer is set for, if it is.
    var framesAlarm = Alarm<Instant>()
    /// Whether Improv is on air (its advertisement and its service): not while this machine's
    /// Wi-Fi is connected, nor from ``ImprovProvisioner/withdrawDelay`` after it was provisioned.
    var offered = true
    /// Whether the identify program runs: one at a time, however many frames ask.
    var identifying = false
    /// Whether a scan is under way: its result answers every scan asked meanwhile.
    var scanning = false
    /// The last scan's networks and when they came: they answer every scan asked within
    /// ``ImprovProvisioner/scanReuse`` of it, without asking NetworkManager again.
    var lastScan: (networks: [Improv.Network], at: Instant)?
    /// When each central's last journal line about its frames was written, and how many were
    /// held back since: at most one a central every interval, as GATT writes are announced.
    var lines: [String: (at: Instant, held: Int)] = [:]

    /// Whether a journal line about `central`'s frame may be written at `now`: the number of
    /// lines held back since its last one, or nil when this one is held back too.
    mutating func mayLog(_ central: String, at now: Instant, every interval: Duration) -> Int? {
        if let last = lines[central], now < last.at.advanced(by: interval) {
            lines[central]!.held += 1
            return nil
        }
        let held = lines[central]?.held ?? 0
        // Only centrals heard from within the interval are kept: as many as write at once.
        lines = lines.filter { now < $0.value.at.advanced(by: interval) }
        lines[central] = (now, 0)
        return held
    }

    /// A run of `config`, its device info read from this machine.
    init(_ config: ImprovConfig) {
        session = ImprovSession(config, deviceInfo: Self.deviceInfo(config))
    }

    /// The configuration.
    var config: ImprovConfig { session.config }

    /// The run a reload that changed `[improv]` goes on with: the session reconfigured (a join
    /// under way stays the one), the partial frames and the work in flight kept.
    func reconfigured(_ config: ImprovConfig) -> ImprovRun {
        var next = self
        next.session = session.reconfigured(config, deviceInfo: Self.deviceInfo(config))
        return next
    }

    /// What Improv's device info answers: bleadvd, its version, the hardware (the board's model
    /// from the device tree, or Linux), the device's name (the hostname).
    static func deviceInfo(_ config: ImprovConfig) -> [String] {
        var name = [CChar](repeating: 0, count: 65)
        let hostname = gethostname(&name, name.count - 1) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "linux"
        return ["bleadvd", ControlAPI.version, config.hardware ?? boardModel() ?? "Linux", config.deviceName ?? hostname]
    }

    /// Where the device tree names the board: /sys first, since the unit's `ProcSubset=pid`
    /// hides /proc/device-tree (a link to it) from bleadvd.
    static var boardModelFiles: [String] { ["/sys/firmware/devicetree/base/model", "/proc/device-tree/model"] }

    /// The board's model as the device tree names it (`Raspberry Pi 4 Model B Rev 1.4`): the
    /// first of `files` that names one, or nil.
    static func boardModel(files: [String] = boardModelFiles) -> String? {
        for path in files {
            guard let file = fopen(path, "r") else { continue }
            defer { fclose(file) }
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = fread(&buffer, 1, buffer.count, file)
            let model = String(decoding: buffer[..<count].prefix { $0 != 0 }, as: UTF8.self)
            if !model.isEmpty { return model }
        }
        return nil
    }
}
