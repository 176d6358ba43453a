#if canImport(Glibc)
import Glibc
#endif
package import Logging
import Peripheral

/// Log lines on stderr with the `<N>` priority prefix journald reads (`<3>` error ... `<7>`
/// debug), so `journalctl -p warning -u bleadvd` works without a journal library.
package struct JournalLogHandler: LogHandler {
    /// The lowest level written.
    package var logLevel: Logger.Level
    /// Metadata added to every line.
    package var metadata: Logger.Metadata = [:]
    private let label: String

    /// A handler for `label`.
    package init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The syslog priority of a level.
    package static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// The longest line written, in Unicode scalars: what a message holds beyond it is cut, and
    /// the line says how long it was.
    package static let maximumLineLength = 2048

    package func log(event: LogEvent) {
        _ = write(2, Self.line(event, metadata: metadata))
    }

    /// The line for `event`: its priority prefix, then the message and metadata escaped
    /// (`Untrusted`): a newline or a terminal escape from outside can neither start a line
    /// of its own (a forged `<0>` priority) nor act on a terminal. One line, however long.
    package static func line(_ event: LogEvent, metadata: Logger.Metadata = [:]) -> String {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let suffix = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "<\(priority(event.level))>" + Untrusted.shown("\(event.message)\(suffix)", limit: maximumLineLength) + "\n"
    }

    /// One write(2) per line, so lines from different threads never interleave.
    private func write(_ descriptor: Int32, _ line: String) -> Int {
        var line = line
        return line.withUTF8 { Glibc.write(descriptor, $0.baseAddress, $0.count) }
    }
}
