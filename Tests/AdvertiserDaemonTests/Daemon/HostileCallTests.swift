import DBus
import Foundation
import TestSupport
import Testing

/// Hostile calls to the control API and to the advertisement objects, made by a peer we did
/// not write (dbus-python, `Peers/hostile_calls.py`) against the real bleadvd and the BlueZ
/// stand-in: each gets the error in `Peers/hostile_calls.expected` (one line, never the
/// megabyte it was sent), bleadvd stays up, and what was on air stays on air, unchanged.
@Suite("Hostile D-Bus calls", .timeLimit(.minutes(3)))
struct HostileCallTests {
    static let peers = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("TestSupport/Peers")
    static let config = """
        [advertisement.heart]
        local_name = "Thermo-1"

        [advertisement.kitchen.bthome]
        temperature = 21.5
        """

    /// What the stand-in holds: each registered advertisement's path and properties.
    func held(_ connection: DBusConnection) async throws -> [DBusValue] {
        try await connection.call(destination: "org.bluez", path: "/test", interface: "test.StandIn", member: "Advertisements")
    }

    /// The stand-in's registrations and unregistrations so far.
    func registrations(_ connection: DBusConnection) async throws -> [String] {
        let calls = try await connection.call(destination: "org.bluez", path: "/test", interface: "test.StandIn", member: "Calls")
        return (calls.first?.stringArray ?? []).filter { $0.hasPrefix("RegisterAdvertisement") || $0.hasPrefix("UnregisterAdvertisement") }
    }

    @Test("each hostile call gets its one-line error; bleadvd stays up and nothing on air changes")
    func hostileCalls() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startBleadvd(on: bus, config: Self.config)
        try await notify.waitFor("READY=1")
        let observer = try await DBusConnection.connect(to: .address(bus.address))
        let before = try await held(observer)
        let registeredBefore = try await registrations(observer)
        let heart = try #require(before.first?.dictionaryEntries?.compactMap(\.key.string).sorted().first)

        let result = try await runProgram(
            "/usr/bin/python3", [Self.peers.appendingPathComponent("hostile_calls.py").path, bus.address, heart])

        let expected = try String(contentsOf: Self.peers.appendingPathComponent("hostile_calls.expected"), encoding: .utf8)
        #expect(result.status == 0, "\(result.errors)")
        let got = result.output.split(separator: "\n"), want = expected.split(separator: "\n")
        for index in 0..<max(got.count, want.count) {
            let line: Substring? = got.indices.contains(index) ? got[index] : nil
            let wanted: Substring? = want.indices.contains(index) ? want[index] : nil
            #expect(line == wanted)
        }
        #expect(try await held(observer) == before)
        #expect(try await registrations(observer) == registeredBefore)
        let status = try await runProgram(product("bleadvctl"), ["status"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        #expect(status.status == 0 && status.output.contains("heart    advertisement  on"), "\(status.output)")
        _ = (daemon, standIn)
    }
}
