/// Waits for work at most a given time on a clock, and returns then whatever the work does.
///
/// A task group cannot do this: it waits for all its children, so a child stuck on a peer that
/// never answers (and never honours cancellation) holds the group past its deadline. Here the
/// work runs in a task of its own: at the deadline it is cancelled and left to end by itself.
enum Deadline {
    /// `body`'s result if it finished within `limit` on `clock`; nil if the deadline came first
    /// or the waiting task was cancelled.
    static func within<C: Clock, T: Sendable>(
        _ limit: Duration, on clock: C, _ body: @escaping @Sendable () async -> T
    ) async -> T? where C.Duration == Duration {
        let (outcome, settle) = AsyncStream<T?>.makeStream()
        let work = Task {
            settle.yield(await body())
        }
        let timer = Task {
            try? await clock.sleep(for: limit)
            settle.yield(nil)
        }
        var first = outcome.makeAsyncIterator()
        let result = await first.next() ?? nil
        timer.cancel()
        work.cancel()
        settle.finish()
        return result
    }
}
