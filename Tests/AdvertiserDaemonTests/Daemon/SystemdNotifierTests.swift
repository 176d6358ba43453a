import Foundation
import Synchronization
import Testing
import TestSupport

@testable import AdvertiserDaemon

@Suite("Notifying systemd", .timeLimit(.minutes(3)))
struct SystemdNotifierTests {
    @Test("a notify socket nobody reads never blocks the sender: what does not fit is dropped")
    func fullSocketDoesNotBlock() async throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("notify-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let unread = try NotifySocket(in: folder)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": unread.path])

        // Far more than the socket queues (net.unix.max_dgram_qlen, 10 by default). A sender
        // that blocked would never resume this, and the suite's time limit would fail it.
        await withCheckedContinuation { done in
            Thread.detachNewThread {
                for index in 0..<1_000 { notifier.notify("STATUS=change \(index)") }
                done.resume()
            }
        }

        try await unread.waitFor("STATUS=change 0")
    }

    @Test("what follows readiness runs after each READY=1, with systemd or without, and after no other state")
    func afterReadyFollowsEachReady() {
        let calls = Mutex(0)
        let alone = SystemdNotifier(environment: [:], afterReady: { calls.withLock { $0 += 1 } })

        for state in ["STATUS=starting", "READY=1\nSTATUS=on air", "RELOADING=1\nMONOTONIC_USEC=1", "READY=1", "STATUS=READY=1"] {
            alone.notify(state)
        }

        #expect(calls.withLock { $0 } == 2)
    }
}
