import AdvertiserControl
import DBus
import Foundation
import TestSupport
import Testing

/// Load on the real bleadvd with the BlueZ stand-in: concurrent clients toggling advertisements
/// and asking for status, made by dbus-python (`Peers/load_client.py`). Afterwards the state is
/// what the last commands asked for, BlueZ holds exactly what is on, and bleadvd holds no more
/// objects or file descriptors than before.
@Suite("Load", .serialized, .timeLimit(.minutes(3)))
struct LoadTests {
    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("TestSupport/Peers/load_client.py").path
    static let config = """
        [advertisement.shared]
        type = "broadcast"
        manufacturer_data = { "0xFFFF" = "01" }

        [advertisement.second]
        type = "broadcast"
        manufacturer_data = { "0xFFFF" = "02" }

        [advertisement.third]
        type = "broadcast"
        manufacturer_data = { "0xFFFF" = "03" }
        """

    struct Running {
        let bus: PrivateBus
        let standIn: BlueZStandIn
        let daemon: Child
        let observer: DBusConnection

        init(config: String = LoadTests.config) async throws {
            bus = try await PrivateBus()
            standIn = try await BlueZStandIn(bus: bus)
            let notify: NotifySocket
            (daemon, notify, _) = try startBleadvd(on: bus, config: config, captureErrors: false)
            try await notify.waitFor("READY=1")
            observer = try await DBusConnection.connect(to: .address(bus.address))
        }

        /// The stand-in's registrations: advertisement paths.
        func held() async throws -> Set<String> {
            let reply = try await observer.call(destination: "org.bluez", path: "/test", interface: "test.StandIn", member: "Advertisements")
            return Set(reply.first?.dictionaryEntries?.compactMap(\.key.string) ?? [])
        }

        var openFiles: Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/fd").count) ?? -1 }
        var residentKiB: Int {
            let status = (try? String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8)) ?? ""
            return status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
                .flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? -1
        }

        /// The names of bleadvd's threads (/proc/PID/task/*/comm).
        var threads: [String] {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task")) ?? []
            return tasks.sorted().map {
                ((try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\($0)/comm", encoding: .utf8)) ?? "?")
                    .trimmingCharacters(in: .newlines)
            }
        }

        /// Runs the clients at once; their outputs.
        func clients(_ argumentLists: [[String]]) async throws -> [ProgramResult] {
            try await withThrowingTaskGroup(of: ProgramResult.self) { group in
                for arguments in argumentLists {
                    group.addTask { try await runProgram("/usr/bin/python3", [LoadTests.client, bus.address] + arguments) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
    }

    @Test("4 clients × 250 on/off toggles, two on the same advertisement: the last commands win, nothing leaks")
    func toggles() async throws {
        let running = try await Running()
        let files = running.openFiles
        let rss = running.residentKiB

        let results = try await running.clients([
            ["toggle", "shared", "250", "on"], ["toggle", "shared", "250", "on"],
            ["toggle", "second", "250", "off"], ["toggle", "third", "250", "on"],
        ])

        #expect(results.allSatisfy { $0.status == 0 && $0.output == "done 250\n" }, "\(results.map(\.output))")
        let status = try await runProgram(product("bleadvctl"), ["status", "--json"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": running.bus.address])
        let states = try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: [String: Any]]
        #expect(states?["shared"]?["state"] as? String == "on")
        #expect(states?["second"]?["state"] as? String == "off")
        #expect(states?["third"]?["state"] as? String == "on")
        #expect(try await running.held().count == 2)
        #expect(running.openFiles <= files, "open files grew: \(files) -> \(running.openFiles)")
        print("load: 1,000 toggles from 4 clients: open files \(files) -> \(running.openFiles), RSS \(rss) -> \(running.residentKiB) KiB")
    }

    @Test("10,000 status calls from 4 clients are all answered, and nothing leaks")
    func statusCalls() async throws {
        let running = try await Running()
        let files = running.openFiles
        let rss = running.residentKiB

        let results = try await running.clients(Array(repeating: ["status", "2500"], count: 4))

        #expect(results.allSatisfy { $0.status == 0 && $0.output == "done 2500\n" }, "\(results.map(\.output))")
        #expect(running.openFiles <= files, "open files grew: \(files) -> \(running.openFiles)")
        print("load: 10,000 status calls from 4 clients: open files \(files) -> \(running.openFiles), RSS \(rss) -> \(running.residentKiB) KiB")
    }

    @Test("bleadvd does all its work on one thread: after start, 1,000 toggles, 200 sets and a reload")
    func oneThread() async throws {
        let running = try await Running(config: Self.config + "\n[advertisement.sensor.bthome]\ntemperature = 21.5\n")
        let afterStart = running.threads

        let toggled = try await running.clients(Array(repeating: ["toggle", "shared", "250", "on"], count: 4))
        let afterToggles = running.threads
        let client = AdvertiserClient(connection: try DBusBlockingConnection(bus: .address(running.bus.address)))
        for step in 0..<200 { try client.set("sensor", ["temperature": "\(20 + Double(step) / 100)"]) }
        let afterSets = running.threads
        try client.reload()
        // The config check runs on a thread of its own, which ends with it.
        var afterReload = running.threads
        try? await eventually("the config check's thread has ended", every: .milliseconds(50)) {
            afterReload = running.threads
            return afterReload == ["bleadvd"]
        }

        #expect(toggled.allSatisfy { $0.output == "done 250\n" })
        #expect(afterStart == ["bleadvd"])
        #expect(afterToggles == ["bleadvd"])
        #expect(afterSets == ["bleadvd"])
        #expect(afterReload == ["bleadvd"])
    }
}
