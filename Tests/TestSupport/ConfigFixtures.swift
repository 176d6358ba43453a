/// Pieces of a `bleadvd.toml` that tests of several targets share, each a whole table or more, to
/// be joined with `+` (each ends with a newline): one spelling of the lamp that the
/// config, the daemon's services, pairing and the secured values are tested against.
public enum ConfigFixtures {
    /// The lamp, a GATT service of bleadvd's own UUIDs, without characteristics.
    public static let lamp = """
        [service.lamp]
        uuid = "6e400001-b5a3-f393-e0a9-e50e24dcca9e"

        """

    /// The lamp's `label`: text a central reads and writes, "desk" to begin with.
    public static let lampLabel = """
        [service.lamp.characteristic.label]
        uuid = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"
        format = "utf8"
        flags = ["read", "write"]
        value = "desk"

        """

    /// The lamp's `brightness`: one byte a central reads, writes and subscribes to, 10 to begin
    /// with.
    public static let lampBrightness = """
        [service.lamp.characteristic.brightness]
        uuid = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
        format = "uint8"
        flags = ["read", "write", "notify"]
        value = 10

        """

    /// The Battery Service preset at 80 %.
    public static let battery = """
        [service.power.battery]
        level = 80

        """

    /// A Pi's temperature (sint16 in 0.01 °C, as the SIG's 0x2A6E), read from `program` when a
    /// central asks, each answer serving reads for 2 s.
    public static func piTemperature(_ program: String) -> String {
        """
        [service.pi]
        uuid = "6e400020-b5a3-f393-e0a9-e50e24dcca9e"

        [service.pi.characteristic.temperature]
        uuid = "2a6e"
        format = "sint16"
        exponent = -2
        flags = ["read", "notify"]
        read = "\(program)"
        max_age = 2

        """
    }
}
