import AdvertiserConfig

/// A suite that reads config text as a file named `test.toml`, as its error messages name it.
protocol ReadsConfigText {}

extension ReadsConfigText {
    /// The text, parsed.
    func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        try ConfigParser.parse(text, file: "test.toml")
    }

    /// The one-line error the text is refused with; nil when it is taken.
    func error(_ text: String) -> String? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error.description
        }
    }
}
