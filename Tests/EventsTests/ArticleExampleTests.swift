import Foundation
import Testing

import Events

/// The example of the Events article (Sources/Events/Events.docc/Events.md), run as written.
@Suite("The Events article's example", .timeLimit(.minutes(3)))
struct ArticleExampleTests {
    @Test("a task that prefers a loop run by a thread of its own sleeps on LoopClock there, and stops it")
    func example() async throws {
        let (lines, output) = AsyncStream<String>.makeStream()
        let thread = Thread {
            do {
                let loop = try EventLoop()                              // run by this thread, below
                Task(executorPreference: loop) {
                    try await LoopClock(on: loop).sleep(for: .milliseconds(100))
                    output.yield("a moment later, on the loop's thread: \(loop.isCurrent)")
                    loop.stop()
                }
                loop.run()                                              // returns once stop() was called
                output.yield("run returned")
            } catch {
                output.yield("\(error)")
            }
            output.finish()
        }
        thread.start()

        var heard: [String] = []
        for await line in lines { heard.append(line) }

        #expect(heard == ["a moment later, on the loop's thread: true", "run returned"])
    }
}
