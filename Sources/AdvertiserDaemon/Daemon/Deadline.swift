/// Waits for work at most a given time on a clock, and returns then whatever the work does.
///
/// A task group cannot do this: it waits for all its children, so a child stuck on a peer that
/// never answers (and never honours cancellation) holds the group past its deadline. Here the
/// work runs in a task of its own: at the deadline it is cancelled and left to end by itself.
/// The timer is a child of the caller's task, on the caller's executor: it fires even when the
/// work's executor is stuck.
enum Deadline {
    /// How long a control call that reads (`Centrals`, `Bonds`) waits for BlueZ before it
    /// answers from what bleadvd knows: within a second while bluetoothd is stuck, and longer
    /// than a call takes to count as unanswered (`UnansweredCall.countedAfter`), so that such
    /// an answer is always said to be.
    static let readWait: Duration = .milliseconds(800)

    /// `body`'s result if it finished within `limit` on `clock`; nil if the deadline came first
    /// or the waiting task was cancelled. `body` runs in a task that prefers `executor`.
    static func within<C: Clock, T: Sendable>(
        _ limit: Duration, on clock: C, executor: (any TaskExecutor)?, _ body: @escaping @Sendable () async -> T
    ) async -> T? where C.Duration == Duration {
        let (outcome, settle) = AsyncStream<T?>.makeStream()
        let work = Task(executorPreference: executor) {
            settle.yield(await body())
        }
        defer { work.cancel() }
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await clock.sleep(for: limit)
                settle.yield(nil)
            }
            var first = outcome.makeAsyncIterator()
            let result = await first.next() ?? nil
            group.cancelAll()
            settle.finish()
            return result
        }
    }
}
