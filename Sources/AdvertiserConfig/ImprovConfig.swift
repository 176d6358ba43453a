public import Peripheral

/// The `[improv]` table: offer Improv Wi-Fi, so that Home Assistant (or improv-wifi.com)
/// can give this box Wi-Fi credentials over Bluetooth LE. bleadvd then keeps an advertisement
/// and a GATT service, both named `improv`, on air; once the box joined a network they say so
/// (provisioned), and clients leave it alone.
public struct ImprovConfig: Hashable, Sendable {
    /// Whether a person has to allow provisioning first (`bleadvctl improv authorize`); when
    /// false, anyone in radio range may send credentials while the box waits for them.
    public var needsAuthorization = true
    /// How long an authorization holds.
    public var authorization: Duration = .seconds(60)
    /// The name the device info answer gives; nil for the hostname.
    public var deviceName: String?
    /// The hardware the device info answer names; nil for the board's model
    /// (`/sys/firmware/devicetree/base/model`), or `Linux`.
    public var hardware: String?
    /// Where the client is sent once the box is on the network: `{address}` is replaced by the
    /// address it got. Nil for none.
    public var redirectURL: String?
    /// A command run when a client asks the device to identify itself (a light, a sound); nil
    /// offers no identify.
    public var identify: [String]?
    /// What joins the network the client names.
    public var joiner: Joiner = .networkManager

    /// What joins a Wi-Fi network for Improv.
    public enum Joiner: Hashable, Sendable {
        /// NetworkManager, over D-Bus: it also lists the networks in range (Improv's scan).
        case networkManager
        /// A program: given the SSID in `IMPROV_SSID` and the password on its standard input,
        /// it prints the address it got.
        case program(String)
    }

    /// The authorization's allowed length, in seconds.
    public static let authorizationRange = 5...3600
    /// The longest redirect URL: with an address filled in it has to fit a result frame.
    public static let maximumRedirect = 200
    /// The name the advertisement and the service take.
    public static let name = "improv"

    /// The defaults: authorization by `bleadvctl improv authorize` for 60 s, networks joined
    /// by `joiner`.
    public init(joiner: Joiner = .networkManager) {
        self.joiner = joiner
    }
}

extension Reader {
    /// The `[improv]` table.
    func improv(_ fields: [String: TOMLNode]) throws(ConfigError) -> ImprovConfig {
        let path = ["improv"]
        try checkKeys(fields, allowed: ["authorization", "authorization_seconds", "device_name", "hardware", "redirect_url", "identify", "join"], at: path)
        var improv = ImprovConfig()
        if let node = fields["join"] {
            let join = try string(node, path + ["join"])
            if join.hasPrefix("/") {
                improv.joiner = .program(join)
            } else if join != "networkmanager" {
                throw error(path + ["join"], "must be networkmanager or an absolute path to a program (given the SSID in IMPROV_SSID and the password on its standard input)")
            }
        }
        if let node = fields["authorization"] {
            switch try string(node, path + ["authorization"]) {
            case "bleadvctl": improv.needsAuthorization = true
            case "none": improv.needsAuthorization = false
            case let other:
                throw error(path + ["authorization"], "\(Untrusted.quoted(other, limit: 24)) is not an authorization; use bleadvctl (a person runs bleadvctl improv authorize) or none")
            }
        }
        if let node = fields["authorization_seconds"] {
            improv.authorization = .seconds(try number(node, path + ["authorization_seconds"], ImprovConfig.authorizationRange))
        }
        for (key, keyPath) in [("device_name", \ImprovConfig.deviceName), ("hardware", \ImprovConfig.hardware)] {
            guard let node = fields[key] else { continue }
            let text = try string(node, path + [key])
            guard (1...64).contains(text.utf8.count) else { throw error(path + [key], "must be 1 to 64 bytes long") }
            improv[keyPath: keyPath] = text
        }
        if let node = fields["redirect_url"] {
            let url = try string(node, path + ["redirect_url"])
            guard url.hasPrefix("http://") || url.hasPrefix("https://"), url.utf8.count <= ImprovConfig.maximumRedirect,
                  !url.unicodeScalars.contains(where: Untrusted.needsEscape) else {
                throw error(path + ["redirect_url"], "must be an http:// or https:// URL of at most \(ImprovConfig.maximumRedirect) bytes (e.g. \"http://{address}:8123/\")")
            }
            improv.redirectURL = url
        }
        if let node = fields["identify"] {
            let command = try strings(node, path + ["identify"])
            guard let program = command.first, program.hasPrefix("/") else {
                throw error(path + ["identify"], "must be a command as an array, starting with an absolute path (e.g. [\"/usr/local/bin/blink\", \"3\"])")
            }
            improv.identify = command
        }
        return improv
    }
}

extension ImprovConfig {
    /// The state the device starts in: waiting for a person, or for credentials.
    public var firstState: Improv.State { needsAuthorization ? .authorizationRequired : .authorized }

    /// What the device offers: device info always, identify when a command is configured, the
    /// networks in range when NetworkManager joins them.
    public var capabilities: Improv.Capabilities {
        Improv.Capabilities.deviceInfo
            .union(identify == nil ? [] : .identify)
            .union(joiner == .networkManager ? .scan : [])
    }

    /// The advertisement in `state`: connectable, the Improv service's UUID and its service
    /// data in the one packet (31 bytes with the flags: nothing else fits), the adapter's name
    /// in the scan response.
    public func advertisement(state: Improv.State) -> ConfiguredAdvertisement {
        let data = Improv.serviceData(state: state, capabilities: capabilities)
        return ConfiguredAdvertisement(
            advertisement: Advertisement(
                kind: .peripheral, serviceUUIDs: [Improv.serviceUUID],
                serviceData: [.init(uuid: Improv.serviceDataUUID, data: data)], discoverable: true, includes: [.localName]),
            settings: ["service_data.0x4677": .string(Hex.encode(data))],
            services: [Self.name: Improv.serviceUUID])
    }

    /// The GATT service in `state` with `error`: state, error and capabilities one byte each,
    /// the command a client writes (write-only: never shown), the result it is notified. No
    /// link security: Improv's clients do not pair (Home Assistant's cannot); what guards the
    /// credentials is the authorization, and the radio's range.
    public func service(state: Improv.State, error: Improv.ErrorState, result: [UInt8] = []) -> ConfiguredService {
        let bytes = GATTFormat(.hex, maximumLength: Improv.maximumFrame)
        func characteristic(_ name: String, _ uuid: BluetoothUUID, _ flags: Set<GATTFlag>, _ value: [UInt8]) -> GATTCharacteristic {
            GATTCharacteristic(name: name, uuid: uuid, flags: flags, format: bytes, value: value)
        }
        let characteristics = [
            characteristic("state", Improv.stateUUID, [.read, .notify], [state.rawValue]),
            characteristic("error", Improv.errorUUID, [.read, .notify], [error.rawValue]),
            characteristic("command", Improv.commandUUID, [.write], []),
            characteristic("result", Improv.resultUUID, [.read, .notify], result),
            characteristic("capabilities", Improv.capabilitiesUUID, [.read], [capabilities.rawValue]),
        ]
        return ConfiguredService(
            service: GATTService(name: Self.name, uuid: Improv.serviceUUID, characteristics: characteristics),
            values: Dictionary(uniqueKeysWithValues: characteristics.map { ($0.name, GATTValue.bytes($0.value)) }))
    }
}
