import Events
#if canImport(Glibc)
import Glibc
#endif

/// Standard input's lines, read on the event loop when it is readable, so that a command that
/// asks a question goes on serving its other events while the answer is typed. Each line (nil
/// once the input ended) goes to `deliver`, on the loop. Input that epoll cannot watch (a
/// regular file, /dev/null) never blocks: it is read at once, a line per ``start()``.
final class StandardInputLines {
    private let loop: EventLoop
    private let deliver: (String?) -> Void
    private var watch: EventLoop.Watch?
    private var pending: [UInt8] = []
    private var ended = false

    /// Lines for `deliver`; nothing is read before ``start()``.
    init(loop: EventLoop, deliver: @escaping (String?) -> Void) {
        self.loop = loop
        self.deliver = deliver
    }

    /// Starts reading (once started, it goes on until the input ends); where the input cannot
    /// be watched, reads one line now. Call on the loop.
    func start() {
        guard watch == nil, !ended else { return }
        do {
            watch = try loop.watch(0, for: .readable) { [weak self] _ in self?.readable() }
        } catch {
            // Not pollable: a regular file or /dev/null, where a read never waits.
            let line = readLine()
            if line == nil { ended = true }
            deliver(line)
        }
    }

    /// Reads what is there: each whole line delivered (its first 64 bytes: an answer is a
    /// word), the end once.
    private func readable() {
        var chunk = [UInt8](repeating: 0, count: 1024)
        let count = chunk.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR || errno == EAGAIN { return }
        guard count > 0 else {
            finish()
            return
        }
        pending += chunk[..<count]
        while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
            deliver(String(decoding: pending[..<min(end, 64)], as: UTF8.self))
            pending.removeSubrange(...end)
        }
        if pending.count > 4096 { pending.removeAll() }
    }

    private func finish() {
        ended = true
        if let watch { loop.remove(watch) }
        watch = nil
        if !pending.isEmpty { deliver(String(decoding: pending.prefix(64), as: UTF8.self)) }
        pending.removeAll()
        deliver(nil)
    }
}
