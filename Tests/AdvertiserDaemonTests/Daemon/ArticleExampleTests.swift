import AdvertiserConfig
import AdvertiserControl
import DBus
import Foundation
import PeripheralMocks
import TestSupport
import Testing

/// The AdvertiserConfig and AdvertiserControl articles' examples: the same code, with a file
/// of the test's for /etc/bleadvd/bleadvd.toml, bleadvd as the program the config check runs
/// again (it answers as the example does), and a private bus for the system bus.
@Suite("The AdvertiserConfig and AdvertiserControl articles' examples", .timeLimit(.minutes(3)))
struct ArticleExampleTests {
    /// The config example with `text` as the file: what it printed.
    func loadingExample(_ text: String) throws -> [String] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bleadvd-article-\(UUID()).toml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var printed: [String] = []
        do {
            let config = try ConfigCheck.load(
                path: path, arguments: ["bleadvd", "--check-config", "--config", path], executable: product("bleadvd"))
            for name in config.names where config.advertisements[name]!.enabled {
                printed.append("\(name) \(config.advertisements[name]!.advertisement)")
            }
        } catch {
            printed.append("\(error)")
        }
        return printed.map { $0.replacingOccurrences(of: path, with: "bleadvd.toml") }
    }

    @Test("the config example prints each enabled advertisement")
    func configExamplePrintsEnabled() throws {
        let printed = try loadingExample(DaemonSession.config)

        #expect(printed.count == 1)
        #expect(printed.first?.hasPrefix("heart ") == true)
    }

    @Test("the config example prints a refused file's error with its line and key")
    func configExamplePrintsTheError() throws {
        let printed = try loadingExample("[advertisement.heart]\nmajor = 1\n")

        #expect(printed.count == 1)
        #expect(printed.first?.hasPrefix("bleadvd.toml:2: advertisement.heart.major: unknown key; known keys: ") == true, "\(printed)")
    }

    @Test("the control example puts door on air and reads every state")
    func controlExample() async throws {
        let session = try await DaemonSession(onDBus: true)
        let address = try session.bus.address

        let states = try await onThread {
            let client = AdvertiserClient(connection: try DBusBlockingConnection(bus: .address(address)))
            try client.on(["door"])                             // returns once BlueZ registered it
            return try client.status().mapValues(\.state)
        }

        #expect(states == ["door": .on, "heart": .on])
        #expect(session.mock.startAdvertisingCallCount == 2)
    }

    /// Runs blocking client code on a thread of its own, off the executors the daemon needs.
    func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}
