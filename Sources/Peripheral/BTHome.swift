/// A BTHome v2 sensor (bthome.io): named measurements sent as service data for UUID 0xFCD2,
/// which Home Assistant, ESPHome proxies and Theengs decode with no pairing.
///
/// The payload is the device information byte (version 2, and whether the sensor sends only on
/// a trigger), then one object per measurement in ascending object-id order, the packet id
/// (object 0x00) first: a receiver drops a packet whose id it has seen, so the id changes with
/// every new set of values. A measurement may repeat (a probe with four temperatures): its
/// objects follow one another in the order given, which receivers number from 1.
public struct BTHome: Hashable, Sendable {
    /// The service UUID BTHome v2 uses.
    public static let serviceUUID = BluetoothUUID(0xFCD2)

    /// One kind of measurement: its object id and how its value is carried.
    public struct Object: Hashable, Sendable {
        /// The name used in the config and by `bleadvctl set`, e.g. `temperature`.
        public let name: String
        /// The BTHome object id.
        public let id: UInt8
        /// Bytes on air (little endian).
        public let size: Int
        /// Whether the integer on air is signed.
        public let signed: Bool
        /// What one step on air is worth (0.01 for a temperature in hundredths of a degree).
        public let factor: Double
        /// A binary sensor: true or false, one byte.
        public let binary: Bool
        /// The unit, for people.
        public let unit: String
        /// The values that make sense, where narrower than what the bytes can carry
        /// (a battery level is 0 to 100 %).
        public let physical: ClosedRange<Double>?

        init(
            _ name: String, _ id: UInt8, size: Int = 1, signed: Bool = false, factor: Double = 1, unit: String = "",
            physical: ClosedRange<Double>? = nil
        ) {
            self.name = name
            self.id = id
            self.size = size
            self.signed = signed
            self.factor = factor
            self.binary = false
            self.unit = unit
            self.physical = physical
        }

        init(binary name: String, _ id: UInt8) {
            self.name = name
            self.id = id
            size = 1
            signed = false
            factor = 1
            binary = true
            unit = ""
            physical = nil
        }

        /// The smallest and largest steps on air.
        var steps: ClosedRange<Double> {
            if binary { return 0...1 }
            let bits = size * 8
            return signed ? (-power(of2: bits - 1))...(power(of2: bits - 1) - 1) : 0...(power(of2: bits) - 1)
        }

        /// The smallest and largest values the object carries.
        public var range: ClosedRange<Double> {
            let carried = (steps.lowerBound * factor)...(steps.upperBound * factor)
            guard let physical else { return carried }
            return max(carried.lowerBound, physical.lowerBound)...min(carried.upperBound, physical.upperBound)
        }

        /// The bytes of `value`, or nil when it is outside ``range``.
        public func encode(_ value: Double) -> [UInt8]? {
            guard value.isFinite, physical?.contains(value) ?? true else { return nil }
            let step = (value / factor).rounded()
            guard steps.contains(step) else { return nil }
            return littleEndian(UInt64(bitPattern: Int64(step)), count: size)
        }

        /// Why `value` cannot be carried (`is 400; it must be between -327.68 and 327.67 °C`),
        /// or nil when it can.
        public func problem(with value: Double) -> String? {
            guard encode(value) == nil else { return nil }
            let shown = value.isFinite ? BTHome.format(value, decimals: 6) : "\(value)"
            return "is \(shown); it must be between \(format(range.lowerBound)) and \(format(range.upperBound))\(unit.isEmpty ? "" : " " + unit)"
        }

        /// How many decimals a value of this object has (2 for a factor of 0.01).
        var decimals: Int {
            var decimals = 0
            var scaled = factor
            while decimals < 9, (scaled - scaled.rounded()).magnitude > 1e-9 {
                scaled *= 10
                decimals += 1
            }
            return decimals
        }

        /// `value` with this object's decimals, trailing zeros dropped: `327.67`, `-40`.
        public func format(_ value: Double) -> String {
            BTHome.format(value, decimals: decimals)
        }
    }

    /// Every sensor and binary-sensor object of the BTHome v2 format, by object id. Names
    /// with a suffix are the same quantity in another size or resolution.
    public static let objects: [Object] = [
        Object("battery", 0x01, unit: "%", physical: 0...100),
        Object("temperature", 0x02, size: 2, signed: true, factor: 0.01, unit: "°C"),
        Object("humidity", 0x03, size: 2, factor: 0.01, unit: "%", physical: 0...100),
        Object("pressure", 0x04, size: 3, factor: 0.01, unit: "hPa"),
        Object("illuminance", 0x05, size: 3, factor: 0.01, unit: "lx"),
        Object("mass_kg", 0x06, size: 2, factor: 0.01, unit: "kg"),
        Object("mass_lb", 0x07, size: 2, factor: 0.01, unit: "lb"),
        Object("dew_point", 0x08, size: 2, signed: true, factor: 0.01, unit: "°C"),
        Object("count", 0x09),
        Object("energy", 0x0A, size: 3, factor: 0.001, unit: "kWh"),
        Object("power", 0x0B, size: 3, factor: 0.01, unit: "W"),
        Object("voltage", 0x0C, size: 2, factor: 0.001, unit: "V"),
        Object("pm2_5", 0x0D, size: 2, unit: "µg/m³"),
        Object("pm10", 0x0E, size: 2, unit: "µg/m³"),
        Object(binary: "generic", 0x0F),
        Object(binary: "power_on", 0x10),
        Object(binary: "opening", 0x11),
        Object("co2", 0x12, size: 2, unit: "ppm"),
        Object("tvoc", 0x13, size: 2, unit: "µg/m³"),
        Object("moisture", 0x14, size: 2, factor: 0.01, unit: "%", physical: 0...100),
        Object(binary: "battery_low", 0x15),
        Object(binary: "battery_charging", 0x16),
        Object(binary: "carbon_monoxide", 0x17),
        Object(binary: "cold", 0x18),
        Object(binary: "connectivity", 0x19),
        Object(binary: "door", 0x1A),
        Object(binary: "garage_door", 0x1B),
        Object(binary: "gas_detected", 0x1C),
        Object(binary: "heat", 0x1D),
        Object(binary: "light", 0x1E),
        Object(binary: "lock", 0x1F),
        Object(binary: "moisture_detected", 0x20),
        Object(binary: "motion", 0x21),
        Object(binary: "moving", 0x22),
        Object(binary: "occupancy", 0x23),
        Object(binary: "plug", 0x24),
        Object(binary: "presence", 0x25),
        Object(binary: "problem", 0x26),
        Object(binary: "running", 0x27),
        Object(binary: "safety", 0x28),
        Object(binary: "smoke", 0x29),
        Object(binary: "sound", 0x2A),
        Object(binary: "tamper", 0x2B),
        Object(binary: "vibration", 0x2C),
        Object(binary: "window", 0x2D),
        Object("humidity_1", 0x2E, unit: "%", physical: 0...100),
        Object("moisture_1", 0x2F, unit: "%", physical: 0...100),
        Object("count_16", 0x3D, size: 2),
        Object("count_32", 0x3E, size: 4),
        Object("rotation", 0x3F, size: 2, signed: true, factor: 0.1, unit: "°"),
        Object("distance_mm", 0x40, size: 2, unit: "mm"),
        Object("distance_m", 0x41, size: 2, factor: 0.1, unit: "m"),
        Object("duration", 0x42, size: 3, factor: 0.001, unit: "s"),
        Object("current", 0x43, size: 2, factor: 0.001, unit: "A"),
        Object("speed", 0x44, size: 2, factor: 0.01, unit: "m/s"),
        Object("temperature_0_1", 0x45, size: 2, signed: true, factor: 0.1, unit: "°C"),
        Object("uv_index", 0x46, factor: 0.1),
        Object("volume_0_1", 0x47, size: 2, factor: 0.1, unit: "L"),
        Object("volume_ml", 0x48, size: 2, unit: "mL"),
        Object("volume_flow_rate", 0x49, size: 2, factor: 0.001, unit: "m³/h"),
        Object("voltage_0_1", 0x4A, size: 2, factor: 0.1, unit: "V"),
        Object("gas", 0x4B, size: 3, factor: 0.001, unit: "m³"),
        Object("gas_32", 0x4C, size: 4, factor: 0.001, unit: "m³"),
        Object("energy_32", 0x4D, size: 4, factor: 0.001, unit: "kWh"),
        Object("volume", 0x4E, size: 4, factor: 0.001, unit: "L"),
        Object("water", 0x4F, size: 4, factor: 0.001, unit: "L"),
        Object("acceleration", 0x51, size: 2, factor: 0.001, unit: "m/s²"),
        Object("gyroscope", 0x52, size: 2, factor: 0.001, unit: "°/s"),
        Object("volume_storage", 0x55, size: 4, factor: 0.001, unit: "L"),
        Object("conductivity", 0x56, size: 2, unit: "µS/cm"),
        Object("temperature_1", 0x57, signed: true, unit: "°C"),
        Object("temperature_0_35", 0x58, signed: true, factor: 0.35, unit: "°C"),
        Object("count_s8", 0x59, signed: true),
        Object("count_s16", 0x5A, size: 2, signed: true),
        Object("count_s32", 0x5B, size: 4, signed: true),
        Object("power_s32", 0x5C, size: 4, signed: true, factor: 0.01, unit: "W"),
        Object("current_s16", 0x5D, size: 2, signed: true, factor: 0.001, unit: "A"),
        Object("direction", 0x5E, size: 2, factor: 0.01, unit: "°"),
        Object("precipitation", 0x5F, size: 2, factor: 0.1, unit: "mm"),
        Object("channel", 0x60),
        Object("rotational_speed", 0x61, size: 2, unit: "rpm"),
        Object("speed_s32", 0x62, size: 4, signed: true, factor: 0.000001, unit: "m/s"),
        Object("acceleration_s32", 0x63, size: 4, signed: true, factor: 0.000001, unit: "m/s²"),
        Object("light_level", 0x64),
    ]

    /// The objects by name.
    public static let objectsByName: [String: Object] = Dictionary(uniqueKeysWithValues: objects.map { ($0.name, $0) })

    /// The measurements by object name, each one or more values sent in this order; a binary
    /// sensor's are 0 or 1.
    public var values: [String: [Double]]
    /// Whether the sensor sends only when something happens (BTHome's trigger-based flag), so
    /// that receivers do not expect regular updates.
    public var triggerBased: Bool
    /// The packet id (object 0x00).
    public var packetID: UInt8
    /// The key the objects are encrypted with on air; nil for a sensor anyone can read.
    public var encryptionKey: Key?
    /// How many buttons the sensor has: each event's packet carries one button object per
    /// button (BTHome+Events).
    public var buttons = 0
    /// How many dimmers it has, likewise.
    public var dimmers = 0
    /// How long an event's packets stay on air (`event_seconds`), before the next event's or
    /// the measurements alone.
    public var eventBurst: Duration = .seconds(1)
    /// The event being sent, in the packets of its burst; nil between events, when the packets
    /// carry the measurements alone.
    public var event: Event?

    /// A sensor whose measurements may repeat.
    public init(values: [String: [Double]], triggerBased: Bool = false, packetID: UInt8 = 0, encryptionKey: Key? = nil) {
        self.values = values
        self.triggerBased = triggerBased
        self.packetID = packetID
        self.encryptionKey = encryptionKey
    }

    /// A sensor with one value of each measurement.
    public init(values: [String: Double], triggerBased: Bool = false, packetID: UInt8 = 0, encryptionKey: Key? = nil) {
        self.init(values: values.mapValues { [$0] }, triggerBased: triggerBased, packetID: packetID, encryptionKey: encryptionKey)
    }

    /// The device information byte: BTHome version 2, the encryption flag and the
    /// trigger-based flag.
    public var deviceInformation: UInt8 {
        0x40 | (triggerBased ? 0x04 : 0) | (encryptionKey != nil ? 0x01 : 0)
    }

    /// The objects, packet id first, then ascending by object id; a repeated measurement's one
    /// after another, in their order; during an event, its button and dimmer objects among them.
    /// - Throws: ``PeripheralError`` (`invalidValue`) naming an unknown measurement, one without
    ///   a value, or a value outside what its object carries, with the range.
    public func objectBytes() throws(PeripheralError) -> [UInt8] {
        var objects: [(id: UInt8, bytes: [UInt8])] = []
        for name in values.keys.sorted(by: { Self.order($0) < Self.order($1) }) {
            guard let object = Self.objectsByName[name] else {
                throw PeripheralError(.invalidValue, "\(name) is not a BTHome measurement; known: \(Self.objects.map(\.name).joined(separator: ", "))")
            }
            let repeated = values[name]!
            guard !repeated.isEmpty else { throw PeripheralError(.invalidValue, "\(name) has no value") }
            for (index, value) in repeated.enumerated() {
                guard let encoded = object.encode(value) else {
                    let which = repeated.count > 1 ? "\(name) \(index + 1) of \(repeated.count)" : name
                    throw PeripheralError(.invalidValue, "\(which) \(object.problem(with: value) ?? "cannot be carried")")
                }
                objects.append((object.id, encoded))
            }
        }
        if let event {
            guard event.buttons.count == buttons, event.dimmers.count == dimmers else {
                throw PeripheralError(.invalidValue, "an event of \(event.buttons.count) button(s) and \(event.dimmers.count) dimmer(s) for a sensor of \(buttons) and \(dimmers)")
            }
            // Stable: the measurements' order, and the events' among themselves, are kept.
            objects = (objects + Self.objects(of: event)).enumerated()
                .sorted { ($0.element.id, $0.offset) < ($1.element.id, $1.offset) }.map(\.element)
        }
        return [0x00, packetID] + objects.flatMap { [$0.id] + $0.bytes }
    }

    /// The service data for 0xFCD2: the device information byte and the objects, not yet
    /// encrypted (``seal(_:key:address:counter:)`` does that, for the adapter that sends it).
    public func serviceData() throws(PeripheralError) -> [UInt8] {
        [deviceInformation] + (try objectBytes())
    }

    /// An advertisement carrying the sensor, with `localName` in the scan response; with an
    /// ``encryptionKey``, its ``Advertisement/bthomeKey``.
    ///
    /// It is connectable (`peripheral`), not a broadcast: Linux sends a non-connectable
    /// advertisement from a fresh random address (unless the adapter itself is connectable),
    /// and Home Assistant knows a BTHome sensor by its address, and decrypts with it. A
    /// connectable one goes out from the adapter's own address.
    public func advertisement(localName: String? = nil) throws(PeripheralError) -> Advertisement {
        var advertisement = Advertisement(
            kind: .peripheral, serviceData: [.init(uuid: Self.serviceUUID, data: try serviceData())], localName: localName)
        advertisement.bthomeKey = encryptionKey
        // An event is on air for its burst alone (a second unless event_seconds says): at the
        // kernel's default interval, 1.28 s, it could go out once or not at all. A sensor that
        // sends events asks for several packets a burst (BlueZ 5.77 and later act on it; before,
        // bluetoothd -E does, and status names the fields it ignores).
        if buttons + dimmers > 0 {
            advertisement.minInterval = Self.eventInterval.lowerBound
            advertisement.maxInterval = Self.eventInterval.upperBound
        }
        return advertisement
    }

    /// The advertising interval a sensor with buttons or dimmers asks for, in ms: 7 to 10
    /// packets in a burst of a second.
    public static let eventInterval: ClosedRange<UInt32> = 100...150

    private static func order(_ name: String) -> Int {
        objectsByName[name].map { Int($0.id) } ?? Int.max
    }

    /// `value` rounded to `decimals`, trailing zeros dropped, no exponent (no Foundation here);
    /// a value too large for that (no BTHome range comes near) in Swift's own notation.
    static func format(_ value: Double, decimals: Int) -> String {
        let scale = power(of10: decimals)
        let magnitude = (value.magnitude * scale).rounded()
        guard magnitude < 9.0e18 else { return "\(value)" }
        let scaled = Int64(magnitude)
        let whole = scaled / Int64(scale)
        var fraction = String(scaled % Int64(scale))
        fraction = String(repeating: "0", count: max(0, decimals - fraction.count)) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        let sign = value < 0 && scaled != 0 ? "-" : ""
        return sign + String(whole) + (fraction.isEmpty ? "" : "." + fraction)
    }
}
