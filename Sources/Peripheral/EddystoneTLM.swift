/// Eddystone-TLM, the telemetry frame (frame type `20`, version `00`, unencrypted), which a
/// beacon sends beside its UID or URL frame under the same service UUID, FEAA: the battery's
/// voltage, the temperature, how many advertising frames it sent and how long since it booted,
/// each big endian.
public struct EddystoneTLM: Hashable, Sendable {
    /// What changes while it is on air: the counters bleadvd fills in.
    public struct Counters: Hashable, Sendable {
        /// Advertising frames sent since the start (ADV_CNT).
        public var advertisingCount: UInt32
        /// Time since the system booted, in tenths of a second (SEC_CNT).
        public var uptimeTenths: UInt32

        /// Counters.
        public init(advertisingCount: UInt32 = 0, uptimeTenths: UInt32 = 0) {
            self.advertisingCount = advertisingCount
            self.uptimeTenths = uptimeTenths
        }
    }

    /// The temperatures the frame carries: signed 8.8 fixed point, -128 to just under 128 °C.
    public static let temperatureRange: ClosedRange<Double> = -128...(Double(Int16.max) / 256)
    /// The voltages it carries, in mV (0 means "not measured", which the config says by leaving
    /// the key out).
    public static let batteryRange: ClosedRange<UInt16> = 1...UInt16.max
    /// What the frame says for a temperature not measured: -128 °C, `80 00`.
    public static let noTemperature: UInt16 = 0x8000

    /// The battery's voltage in mV; nil when not measured (sent as 0).
    public var batteryMillivolts: UInt16?
    /// The temperature in °C; nil when not measured (sent as `80 00`).
    public var temperature: Double?
    /// The counters.
    public var counters: Counters

    /// A frame.
    public init(batteryMillivolts: UInt16? = nil, temperature: Double? = nil, counters: Counters = Counters()) {
        self.batteryMillivolts = batteryMillivolts
        self.temperature = temperature
        self.counters = counters
    }

    /// What is wrong with `temperature` for the frame, or nil when it fits.
    public static func temperatureProblem(_ temperature: Double) -> String? {
        temperatureRange.contains(temperature) ? nil
            : "is \(temperature) °C; the frame carries -128 to 127.99 °C"
    }

    /// The service data of FEAA: `20 00`, VBATT, TEMP, ADV_CNT, SEC_CNT.
    public var frame: [UInt8] {
        let temperature = temperature.map { UInt16(bitPattern: Int16(clamping: Int(($0 * 256).rounded()))) } ?? Self.noTemperature
        return [0x20, 0x00] + Beacon.bigEndian(batteryMillivolts ?? 0) + Beacon.bigEndian(temperature)
            + Self.bigEndian(counters.advertisingCount) + Self.bigEndian(counters.uptimeTenths)
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { Beacon.bigEndian(UInt16(value >> 16)) + Beacon.bigEndian(UInt16(value & 0xFFFF)) }
}
