import DBus
import Foundation
import TestSupport
import Testing

/// bleadvd as a process against the BlueZ stand-in, which counts slots as BlueZ does (4 free):
/// more advertisements than slots take turns, and `bleadvctl status` says so.
@Suite("More advertisements than slots, end to end", .timeLimit(.minutes(1)))
struct RotationProcessTests {
    /// Six advertisements for four slots: one of priority 10, five that take turns through three,
    /// 5 s a turn: two looks at the stand-in a turn apart never straddle two turns, even on a
    /// loaded machine (with 2 s, one run beside two builds saw two advertisements change).
    static let config = """
        [slots]
        rotate_seconds = 5
        [advertisement.beacon]
        priority = 10
        type = "broadcast"
        manufacturer_data = { "0xFFFF" = "00" }

        """ + (1...5).map { "[advertisement.ad\($0)]\ntype = \"broadcast\"\nmanufacturer_data = { \"0xFFFF\" = \"0\($0)\" }\n" }.joined()

    func held(on bus: PrivateBus) async throws -> Set<String> {
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        let reply = try await connection.call(destination: "org.bluez", path: "/test", interface: "test.StandIn", member: "Advertisements")
        return Set((reply[0].dictionaryEntries ?? []).compactMap { $0.key.string ?? $0.key.objectPath?.rawValue })
    }

    @Test("six for four slots: the beacon stays on air, five take turns through three, and status says each one's share")
    func sixForFour() async throws {
        let bus = try PrivateBus()
        let standIn = try BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startBleadvd(on: bus, config: Self.config, arguments: ["--log-level", "debug"])
        try await notify.waitFor("READY=1")
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        var status = ""
        // The daemon turns the advertisements on in name order: the beacon comes last, and the
        // plan is made again when it does.
        try await eventually("five rotating beside the beacon on air") {
            status = try await runProgram(product("bleadvctl"), ["status", "--json"], environment: environment).output
            return status.components(separatedBy: "\"state\": \"rotating\"").count == 6
                && status.contains("\"beacon\": {\"kind\": \"advertisement\", \"desired\": true, \"state\": \"on\"")
        }
        let first = try await held(on: bus)

        var second = first
        try await eventually("a turn", within: .seconds(15)) {
            second = try await held(on: bus)
            return second.count == 4 && second != first
        }

        #expect(first.count == 4)
        #expect(first.subtracting(second).count == 1)
        #expect(status.contains("\"beacon\": {\"kind\": \"advertisement\", \"desired\": true, \"state\": \"on\""), "\(status)")
        #expect(status.contains("\"air_share\": 0.6"), "\(status)")
        try await notify.waitFor("STATUS=1 of 6 enabled advertisement(s) on air, 5 taking turns")
        let table = try await runProgram(product("bleadvctl"), ["status"], environment: environment).output
        #expect(table.split(separator: "\n").filter { $0.contains(" rotating ") && $0.contains("on air 60% of the time, ") }.count == 5, "\(table)")
        _ = (standIn, daemon)
    }
}
