public import Logging
import Synchronization

/// The lines a logger wrote, debug included, each as `format` makes it of the event and the
/// handler's metadata (by default the level and the message: `notice: …`).
public final class LogLines: Sendable {
    public typealias Format = @Sendable (LogEvent, Logger.Metadata) -> String

    private let lines = Mutex<[String]>([])
    private let format: Format

    public init(format: @escaping Format = { event, _ in "\(event.level): \(event.message)" }) {
        self.format = format
    }

    /// Everything logged so far.
    public var all: [String] { lines.withLock { $0 } }

    /// A logger whose every line is recorded here.
    public func logger(label: String = "test") -> Logger {
        Logger(label: label) { [self] _ in Handler(lines: self) }
    }

    struct Handler: LogHandler {
        let lines: LogLines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let line = lines.format(event, metadata)
            lines.lines.withLock { $0.append(line) }
        }
    }
}
