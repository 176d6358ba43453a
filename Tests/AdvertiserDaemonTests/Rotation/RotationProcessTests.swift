import DBus
import Foundation
import TestSupport
import Testing

/// bleadvd as a process against the BlueZ stand-in, which counts slots as BlueZ does (4 free):
/// more advertisements than slots take turns, and `bleadvctl status` says so.
@Suite("More advertisements than slots, end to end", .timeLimit(.minutes(3)))
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

    /// What the stand-in has on air: each registration's manufacturer data (a turn changes what
    /// a slot carries, not the slot).
    func held(on bus: PrivateBus) async throws -> Set<String> {
        Set(try await carried(on: bus).values)
    }

    @Test("six for four slots: the beacon stays on air, five take turns through three, and status says each one's share")
    func sixForFour() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
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
        try await eventually("a turn") {
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
    /// Five advertisements for the stand-in's four slots, 2 s a turn: one out and one in each turn.
    static let fiveForFour = "[slots]\nrotate_seconds = 2\n"
        + (1...5).map { "[advertisement.ad\($0)]\ntype = \"broadcast\"\nmanufacturer_data = { \"0xFFFF\" = \"0\($0)\" }\n" }.joined()

    /// What each registered advertisement carries on air, by path: its manufacturer data in hex.
    func carried(on bus: PrivateBus) async throws -> [String: String] {
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        let reply = try await connection.call(destination: "org.bluez", path: "/test", interface: "test.StandIn", member: "Advertisements")
        var carried: [String: String] = [:]
        for entry in reply[0].dictionaryEntries ?? [] {
            let path = entry.key.string ?? entry.key.objectPath?.rawValue ?? "?"
            let data = entry.value.variantDictionary?["ManufacturerData"]?.dictionaryEntries?.first?.value.variantValue?.bytes ?? []
            carried[path] = data.map { String(format: "%02x", $0) }.joined()
        }
        return carried
    }

    @Test("a local program that registers the moment a slot frees gets none of bleadvd's: through every turn bleadvd still holds all four")
    func slotTakerGetsNothing() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startBleadvd(on: bus, config: Self.fiveForFour)
        try await notify.waitFor("READY=1")
        var first: [String: String] = [:]
        try await eventually("four of the five on air") {
            first = try await carried(on: bus)
            return first.count == 4
        }
        let script = BlueZStandIn.script.deletingLastPathComponent().appendingPathComponent("slot_taker.py").path
        let taker = try Child("/usr/bin/python3", [script, bus.address, "/org/bluez/hci0"], captureErrors: false)
        let said = try await PrivateBus.line(from: taker.stdout)

        // Turns until all five sets of four were on air (about five turns of 2 s; up to 60 s on a
        // loaded machine, where 11 s once held one turn), looked at four times a second: bleadvd's
        // registrations and the taker's.
        var ours: [Int] = []
        var theirs: [Int] = []
        var onAir: Set<Set<String>> = [Set(first.values)]
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: .seconds(60))
        while clock.now < end && onAir.count < 5 {
            try await Task.sleep(for: .milliseconds(250))
            let now = try await carried(on: bus)
            ours.append(now.keys.filter { !$0.hasPrefix("/org/taker/") }.count)
            theirs.append(now.keys.filter { $0.hasPrefix("/org/taker/") }.count)
            onAir.insert(Set(now.filter { !$0.key.hasPrefix("/org/taker/") }.values))
        }

        #expect(said == "ready")
        #expect(onAir.count == 5, "sets of four seen on air: \(onAir.count)")
        #expect(theirs.max() == 0, "the taker's registrations, 4 times a second: \(theirs)")
        #expect(ours.min() == 4, "bleadvd's registrations, 4 times a second: \(ours)")
        _ = (standIn, daemon, taker)
    }
}
