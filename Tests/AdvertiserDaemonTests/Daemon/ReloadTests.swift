import AdvertiserConfig
import AdvertiserControl
import AdvertiserDaemon
import Foundation
import Testing

/// Reloads asked for in quick succession (SIGHUP, SIGHUP; or a D-Bus Reload during one) and
/// during shutdown.
@Suite("Reload order", .timeLimit(.minutes(3)))
struct ReloadTests {
    static let older = try! ConfigParser.parse("[advertisement.older]\nlocal_name = \"A\"\n", file: "older.toml")
    static let newer = try! ConfigParser.parse("[advertisement.newer]\nlocal_name = \"B\"\n", file: "newer.toml")

    /// A reload of the older file, held in its read until `later` more reloads (which read the
    /// newer file) have been asked for; returns once all have answered, with the reads counted.
    fileprivate func reloads(whileOneIsSlow later: Int) async throws -> (Reads, DaemonSession) {
        let reads = Reads()
        let session = try await DaemonSession(loadConfig: { _ throws(ConfigError) in
            // The first read is slow (a large file); the next, of a newer file, are quick.
            await reads.next() == 1 ? reads.held(Self.older) : Self.newer
        })
        let daemon = session.daemon
        let first = Task { try await daemon.reload() }
        await reads.waitUntilHeld()
        let more = (0..<later).map { _ in Task { try await daemon.reload() } }
        for _ in 0..<100 { await Task.yield() }
        reads.release()
        try await first.value
        for reload in more { try await reload.value }
        return (reads, session)
    }

    @Test("two reloads apply in the order they were asked for, however slow the first file is to read")
    func reloadsApplyInOrder() async throws {
        let (_, session) = try await reloads(whileOneIsSlow: 1)

        #expect(await session.daemon.advertising.list() == ["newer"])
    }

    @Test("reloads asked for while one is under way join the one waiting: ten asks read the file twice, and each gets the newer file's answer")
    func reloadsCoalesce() async throws {
        let (reads, session) = try await reloads(whileOneIsSlow: 10)

        #expect(await reads.count == 2)
        #expect(await session.daemon.advertising.list() == ["newer"])
    }

    @Test("a reload asked for once shutdown began is refused, and nothing is read")
    func reloadDuringShutdownIsRefused() async throws {
        let reads = Reads()
        let session = try await DaemonSession(loadConfig: { _ throws(ConfigError) in
            _ = await reads.next()
            return Self.newer
        })
        session.stop()
        try await session.running.value

        await #expect(throws: ReloadError("bleadvd is stopping; nothing was reloaded")) { try await session.daemon.reload() }
        #expect(await reads.count == 0)
    }
}

/// Counts config reads; can hold the first one until released.
private actor Reads {
    private(set) var count = 0
    private var gate: CheckedContinuation<Void, Never>?
    private var holding: [CheckedContinuation<Void, Never>] = []
    private var released = false

    func next() -> Int {
        count += 1
        return count
    }

    /// Waits until released, then returns `config`.
    func held(_ config: DaemonConfig) async -> DaemonConfig {
        if !released {
            await withCheckedContinuation { continuation in
                gate = continuation
                holding.forEach { $0.resume() }
                holding = []
            }
        }
        return config
    }

    func waitUntilHeld() async {
        guard gate == nil else { return }
        await withCheckedContinuation { holding.append($0) }
    }

    nonisolated func release() {
        Task { await self.open() }
    }

    private func open() {
        released = true
        gate?.resume()
        gate = nil
    }
}
