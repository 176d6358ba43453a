import AdvertiserDaemon
import Logging
import Testing

/// What reaches the journal: one line per message, whatever the message holds.
@Suite("Journal log lines")
struct JournalLogHandlerTests {
    static func event(_ message: Logger.Message, level: Logger.Level = .info) -> LogEvent {
        LogEvent(level: level, message: message, metadata: nil, source: "test", file: #fileID, function: #function, line: #line)
    }

    @Test("a value with a newline and a priority prefix stays in its own line, at its own priority")
    func forgedLineStaysInItsLine() {
        let line = JournalLogHandler.line(Self.event("heart: set local_name=\"T1\n<0>bleadvd: FORGED\""))

        #expect(line == "<6>heart: set local_name=\"T1\\n<0>bleadvd: FORGED\"\n")
    }

    @Test("a burst of text is one line of at most the longest length, saying how long it was")
    func longMessageIsCut() {
        let line = JournalLogHandler.line(Self.event("\(String(repeating: "x", count: 1_000_000))"))

        #expect(line.unicodeScalars.count < JournalLogHandler.maximumLineLength + 40)
        #expect(line.hasSuffix("... (1000000 characters)\n"))
    }
}
