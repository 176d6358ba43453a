public import DBus
public import Peripheral

/// The daemon's D-Bus contract. Any program can use it; `bleadvctl` is one.
///
/// - Bus name `org.bleadvd.Advertiser` on the system bus, object `/org/bleadvd/Advertiser`,
///   interface `org.bleadvd.Advertiser1`:
///   - `On(as names)`, `Off(as names)`: no names means every configured advertisement. `On`
///     returns once BlueZ registered them all.
///   - `Status() -> a{sa{sv}}`: per name `desired` b, `state` s (on, off, retrying, waiting,
///     failed), `since_seconds` d, `values` a{ss} (its config values, as set now), and when set
///     `id` s, `error` s, `error_code` s, `retry_in_seconds` d.
///   - `List() -> as`: the configured names.
///   - `Reload()`: re-reads the config file; a bad file is refused and nothing changes.
///   - `Set(s name, a{sv} values)`: changes values on air in place (BTHome measurements,
///     beacon fields, raw fields by config key), checked as the config file is.
///   - signal `ValuesChanged(s name, a{ss} values)` when changed values went to BlueZ.
///   - signal `StateChanged(s name, s state)`, once per change; changes in quick succession
///     are coalesced, so a listener may miss a passing state but always gets the latest.
/// - Errors are named `org.bleadvd.Error.<Code>` after `PeripheralError.Code` (e.g.
///   `org.bleadvd.Error.UnknownName`), plus `org.bleadvd.Error.Config` for a refused config.
public enum ControlAPI {
    /// bleadvd's version, which `--version` of both programs prints and the Makefile gives
    /// the .deb: the one place it is written.
    public static let version = "0.1.0"
    /// The daemon's well-known name.
    public static let busName = "org.bleadvd.Advertiser"
    /// The control object.
    public static let path: DBusObjectPath = "/org/bleadvd/Advertiser"
    /// The control interface.
    public static let interface = "org.bleadvd.Advertiser1"
    /// The prefix of the daemon's error names.
    public static let errorPrefix = "org.bleadvd.Error."
    /// The error name of a refused config file.
    public static let configError = DBusError.Name(rawValue: errorPrefix + "Config")

    /// The D-Bus error name for a peripheral error code: `org.bleadvd.Error.NoFreeInstance`.
    public static func errorName(_ code: PeripheralError.Code) -> DBusError.Name {
        DBusError.Name(rawValue: errorPrefix + code.rawValue.prefix(1).uppercased() + code.rawValue.dropFirst())
    }

    /// A peripheral error as the daemon answers it.
    public static func dbusError(_ error: PeripheralError) -> DBusError {
        DBusError(errorName(error.code), error.message)
    }
}
