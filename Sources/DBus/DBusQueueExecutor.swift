import Dispatch

/// Runs an actor's jobs on a `DispatchQueue`, so the actor and the libdbus loop share one
/// serial executor (Linux's Dispatch has no `DispatchSerialQueue` executor of its own).
///
/// Everything that touches a libdbus connection runs here: the watch and timeout sources, the
/// dispatch of incoming messages, and the connection actor's methods. It is also the task
/// executor of exported methods' handlers, so the default actors they call run here too,
/// without a hop to Swift's pool and back (see ``DBusConnection``'s export).
final class DBusQueueExecutor: SerialExecutor, TaskExecutor, @unchecked Sendable {
    let queue: DispatchQueue

    private static let key = DispatchSpecificKey<ObjectIdentifier>()

    init(queue: DispatchQueue) {
        self.queue = queue
        queue.setSpecific(key: Self.key, value: ObjectIdentifier(self))
    }

    /// Whether the caller runs on this executor's queue.
    var isCurrent: Bool {
        DispatchQueue.getSpecific(key: Self.key) == ObjectIdentifier(self)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }
}
