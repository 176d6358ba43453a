/// What the kernel refused an event loop (an epoll, eventfd, timerfd or signalfd, a watch, the
/// thread), in words.
public struct EventLoopError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was refused, and the kernel's reason.
    public var message: String

    /// An error.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
