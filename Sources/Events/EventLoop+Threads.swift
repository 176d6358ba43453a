internal import CEvents
#if canImport(Glibc)
import Glibc
#endif

extension EventLoop {
    /// Runs `work`, which blocks, on a new thread of its own (a child process's wait, say), and
    /// returns its result to the caller's executor. The thread ends with the work; Swift's pool
    /// is not used.
    public static func detached<T: Sendable>(
        name: String, _ work: @escaping @Sendable () -> T
    ) async -> T {
        await withCheckedContinuation { continuation in
            if !spawnThread(name: name, { continuation.resume(returning: work()) }) {
                continuation.resume(returning: work())
            }
        }
    }

    /// Starts a detached thread named `name` that runs `body`. Returns whether it started.
    @discardableResult
    static func spawnThread(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        final class Start {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        let created = pthread_create(&thread, &attributes, { argument in
            let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
            bleadvd_name_thread(start.name)
            start.body()
            return nil
        }, start)
        if created != 0 { Unmanaged<Start>.fromOpaque(start).release() }
        return created == 0
    }
}
