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
}
