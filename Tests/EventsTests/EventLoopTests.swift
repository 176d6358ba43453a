import Foundation
import Synchronization
import Testing

@testable import Events
import TestSupport

/// The one-thread loop bleadvd runs on: work, timers, watches and the clock's sleeps, each on
/// the loop's thread.
@Suite("The event loop", .timeLimit(.minutes(3)))
struct EventLoopTests {
    /// Runs `body` on `loop` and returns what it returns.
    func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: body()) }
        }
    }

    /// The names of this process's threads.
    func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.map {
            ((try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
        }
    }

    @Test("work handed over from another thread runs on the loop's thread")
    func workRunsOnTheLoop() async throws {
        let loop = try EventLoop.onNewThread(name: "loop-work")

        let onLoop = await onLoop(loop) { loop.isCurrent }

        #expect(onLoop)
        #expect(!loop.isCurrent)
    }

    @Test("an actor whose executor is the loop runs there")
    func actorRunsOnTheLoop() async throws {
        actor OnLoop {
            let loop: EventLoop
            init(_ loop: EventLoop) { self.loop = loop }
            nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
            func isOnLoop() -> Bool { loop.isCurrent }
        }
        let loop = try EventLoop.onNewThread(name: "loop-actor")

        let onLoop = await OnLoop(loop).isOnLoop()

        #expect(onLoop)
    }

    @Test("timers fire in the order of their deadlines, whatever the order they were set in")
    func timersFireInOrder() async throws {
        let loop = try EventLoop.onNewThread(name: "loop-timers")
        let fired = Mutex<[Int]>([])

        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                let start = ContinuousClock.now
                for (index, delay) in [30, 10, 20].enumerated() {
                    loop.schedule(at: start + .milliseconds(delay)) { fired.withLock { $0.append(index) } }
                }
                loop.schedule(at: start + .milliseconds(40)) { done.resume() }
            }
        }

        #expect(fired.withLock { $0 } == [1, 2, 0])
    }

    @Test("a cancelled timer never fires, and the one after it still does")
    func cancelledTimerStaysQuiet() async throws {
        let loop = try EventLoop.onNewThread(name: "loop-cancel")
        let fired = Mutex<[String]>([])

        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                let start = ContinuousClock.now
                let early = loop.schedule(at: start + .milliseconds(10)) { fired.withLock { $0.append("early") } }
                loop.schedule(at: start + .milliseconds(30)) {
                    fired.withLock { $0.append("late") }
                    done.resume()
                }
                loop.cancel(early)
            }
        }

        #expect(fired.withLock { $0 } == ["late"])
    }

    @Test("a watch hears a pipe become readable; paused, it hears nothing")
    func watchHearsAPipe() async throws {
        let loop = try EventLoop.onNewThread(name: "loop-watch")
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let (reader, writer) = (ends[0], ends[1])
        let heard = Mutex<Int>(0)
        let watch = try await onLoop(loop) {
            Result { () throws(EventLoopError) in
                try loop.watch(reader, for: .readable) { readiness in
                    var byte: UInt8 = 0
                    if readiness.readable, read(reader, &byte, 1) == 1 { heard.withLock { $0 += 1 } }
                }
            }
        }.get()

        try await onLoop(loop) { Result { () throws(EventLoopError) in try loop.update(watch, to: .nothing) } }.get()
        var byte: UInt8 = 1
        _ = write(writer, &byte, 1)
        try await Task.sleep(for: .milliseconds(50))
        let whilePaused = heard.withLock { $0 }
        try await onLoop(loop) { Result { () throws(EventLoopError) in try loop.update(watch, to: .readable) } }.get()
        try await eventually("the resumed watch is heard") { heard.withLock { $0 } != 0 }

        #expect(whilePaused == 0)
        #expect(heard.withLock { $0 } == 1)
        await onLoop(loop) { loop.remove(watch) }
    }

    @Test("LoopClock's sleep ends at its deadline, not before")
    func clockSleeps() async throws {
        let clock = LoopClock(on: try EventLoop.onNewThread(name: "loop-clock"))
        let start = ContinuousClock.now

        try await clock.sleep(for: .milliseconds(50))

        #expect(ContinuousClock.now - start >= .milliseconds(50))
    }

    @Test("a cancelled LoopClock sleep ends at once with CancellationError")
    func cancelledSleep() async throws {
        let clock = LoopClock(on: try EventLoop.onNewThread(name: "loop-sleep"))
        let sleeper = Task { try await clock.sleep(for: .seconds(30)) }

        sleeper.cancel()
        let result = await sleeper.result

        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test("a loop on a thread of its own ends that thread when it is released")
    func threadEndsWithTheLoop() async throws {
        var loop: EventLoop? = try EventLoop.onNewThread(name: "loop-release")
        _ = await onLoop(loop!) { true }
        let whileHeld = threadNames().filter { $0 == "loop-release" }.count

        loop = nil
        var afterwards = threadNames().filter { $0 == "loop-release" }.count
        for _ in 0..<100 where afterwards > 0 {
            try await Task.sleep(for: .milliseconds(10))
            afterwards = threadNames().filter { $0 == "loop-release" }.count
        }

        #expect(whileHeld == 1)
        #expect(afterwards == 0)
    }

    @Test("blocking work runs on a thread of its own, which ends with it")
    func detachedWork() async throws {
        let name = await EventLoop.detached(name: "loop-detached") {
            ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
        }

        #expect(name == "loop-detached")
    }
}
