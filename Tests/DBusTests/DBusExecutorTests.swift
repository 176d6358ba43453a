import Dispatch
import Synchronization
import Testing
import TestSupport

@testable import DBus

/// How a connection's queue runs the jobs that its events make runnable.
@Suite("The connection's executor", .timeLimit(.minutes(1)))
struct DBusExecutorTests {
    @Test("a caller on the connection is resumed by the event that brought its reply, not via the global pool")
    func replyResumesTheCallerInsideTheEvent() async throws {
        let session = try await PeerSession()

        let resumedInEvents = try await session.connection.jobsRunInEventsDuring(calls: 20)

        // Each reply's task runs inside the read event that dispatched it (and its hop back
        // onto the connection after it). Resumed through the global pool instead, it would
        // come back to the queue from another thread, outside any event.
        #expect(resumedInEvents >= 20)
    }

    @Test("an event runs at most the budget of jobs itself and leaves the rest to the queue, which runs them all")
    func jobsPastTheBudgetStillRun() async {
        let executor = DBusQueueExecutor(queue: DispatchQueue(label: "test.executor"))
        let jobs = DBusQueueExecutor.handlerJobBudget + 36
        let ran = Tally()

        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            executor.queue.async {
                executor.runHoldingJobs {
                    for _ in 0..<jobs {
                        Task(executorPreference: executor.replies) {
                            if ran.add() == jobs { done.resume() }
                        }
                    }
                }
            }
        }

        #expect(ran.count == jobs)
        #expect(executor.queue.sync { executor.jobsRunInHandlers } == DBusQueueExecutor.handlerJobBudget)
    }
}

/// A count that any thread may bump.
private final class Tally: Sendable {
    private let value = Mutex(0)

    var count: Int { value.withLock { $0 } }

    /// Adds one and returns the new count.
    func add() -> Int {
        value.withLock { $0 += 1; return $0 }
    }
}

extension DBusConnection {
    /// Makes `calls` calls in a row from the connection's own executor and returns how many
    /// jobs ran inside read events meanwhile.
    fileprivate func jobsRunInEventsDuring(calls: Int) async throws -> Int {
        let before = loop.executor.jobsRunInHandlers
        for _ in 0..<calls {
            _ = try await callPeer("Echo", [.variant(.int32(1))], expecting: "v")
        }
        return loop.executor.jobsRunInHandlers - before
    }
}
