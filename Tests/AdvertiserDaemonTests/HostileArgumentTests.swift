import Foundation
import PeripheralMocks
import TestSupport
import Testing

/// Bad `bleadvctl` arguments against a running daemon: each is refused with exit 2 and one
/// line on stderr (never the 100,000 characters it was given), and BlueZ is asked nothing.
@Suite("Hostile bleadvctl arguments", .timeLimit(.minutes(1)))
struct HostileArgumentTests {
    static let long = String(repeating: "x", count: 100_000)
    static let shownLong = "\"xxxxxxxxxxxxxxxxxxxxxxxx...\" (100000 characters)"

    static let cases: [([String], String)] = [
        (["frobnicate"], "bleadvctl: Unexpected argument 'frobnicate' (see 'bleadvctl --help')"),
        (["set"], "bleadvctl: Missing expected argument '<name>' (see 'bleadvctl --help')"),
        (["set", "kitchen"], "bleadvctl: Missing expected argument '<key=value> ...' (see 'bleadvctl --help')"),
        (["set", "kitchen", "temperature"], "bleadvctl: \"temperature\" is not KEY=VALUE (see 'bleadvctl --help')"),
        (["set", "kitchen", "=5"], "bleadvctl: \"=5\" is not KEY=VALUE (see 'bleadvctl --help')"),
        (["set", "kitchen", "temperature="], "bleadvctl: advertisement.kitchen.bthome.temperature: must be a number, not string"),
        (["set", "kitchen", "\(long)=1"], "bleadvctl: \(shownLong) is no key of the config file"),
        (["set", "kitchen", "local_name=\(long)"], "bleadvctl: advertisement.kitchen: local_name is 100000 bytes; a Bluetooth device name is at most 248"),
        (["set", "kitchen", "enabled=false"], "bleadvctl: advertisement.kitchen.enabled: is not a value; turn advertisements on and off with bleadvctl on and off"),
        (["on", long], "bleadvctl: no advertisement named \(shownLong)"),
        (["on", "heart", "nosuch", "other"], "bleadvctl: no advertisement named \"nosuch\", \"other\""),
        (["off", "heart", "--json"], "bleadvctl: Unknown option '--json' (see 'bleadvctl --help')"),
        (["status", "--bogus"], "bleadvctl: Unknown option '--bogus' (see 'bleadvctl --help')"),
        (["preview", "--config", "/dev/zero"], "bleadvctl: /dev/zero: is not a regular file (a FIFO, a device or a socket); give a config file"),
        (["preview", "--config", "/nonexistent.toml"], "bleadvctl: /nonexistent.toml: the config file does not exist"),
    ]

    @Test("each bad argument list exits 2 with one line, and BlueZ is asked nothing", arguments: cases)
    func refused(arguments: [String], message: String) async throws {
        let session = try await DaemonSession(config: SetTests.config)
        let registered = session.mock.startAdvertisingCallCount

        let result = try await runProgram(product("bleadvctl"), arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address])

        #expect(result.status == 2)
        #expect(result.errors == message + "\n")
        #expect(session.mock.startAdvertisingCallCount == registered)
        #expect(session.mock.stopAdvertisingCallCount == 0)
        #expect(session.mock.updateAdvertisementCallCount == 0)
    }
}
