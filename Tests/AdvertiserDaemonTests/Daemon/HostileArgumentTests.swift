import Foundation
import PeripheralMocks
import TestSupport
import Testing

/// Bad `bleadvctl` arguments against a running daemon: each is refused with exit 2 and one
/// line on stderr (never the 100,000 characters it was given), and BlueZ is asked nothing.
@Suite("Hostile bleadvctl arguments", .timeLimit(.minutes(3)))
struct HostileArgumentTests {
    static let long = String(repeating: "x", count: 100_000)
    static let shownLong = "\"xxxxxxxxxxxxxxxxxxxxxxxx...\" (100000 characters)"

    static let cases: [([String], String)] = [
        (["frobnicate"], "bleadvctl: Unexpected argument 'frobnicate' (see 'bleadvctl --help')"),
        (["set"], "bleadvctl: Missing expected argument '<name>' (see 'bleadvctl --help')"),
        (["set", "kitchen"], "bleadvctl: nothing to set; give KEY=VALUE, e.g. temperature=21.5, or --stdin (see 'bleadvctl --help')"),
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
        let session = try await DaemonSession(onDBus: true, config: SetTests.config)
        let registered = session.mock.startAdvertisingCallCount

        let result = try await runProgram(product("bleadvctl"), arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address])

        #expect(result.status == 2)
        #expect(result.errors == message + "\n")
        #expect(session.mock.startAdvertisingCallCount == registered)
        #expect(session.mock.stopAdvertisingCallCount == 0)
        #expect(session.mock.updateAdvertisementCallCount == 0)
    }

    @Test("output that cannot be written is a failure: exit 1 and the reason", arguments: ["> /dev/full", ">&-"])
    func unwritableOutputFails(redirection: String) async throws {
        let session = try await DaemonSession(onDBus: true)

        let result = try await runProgram("/bin/sh", ["-c", "'\(product("bleadvctl"))' list \(redirection)"],
                                          environment: ["DBUS_SYSTEM_BUS_ADDRESS": session.bus.address])

        #expect(result.status == 1)
        #expect(result.errors.hasPrefix("bleadvctl: cannot write the output: "), "\(result.errors)")
    }

    @Test("a bus that accepts the connection and never answers is given up on after --timeout")
    func silentBusTimesOut() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("silent-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let socket = folder.appendingPathComponent("bus").path
        // A listener that accepts and says nothing, as a stopped (SIGSTOP) dbus-daemon does.
        let listener = try Child("/usr/bin/python3", ["-c", """
            import socket, time
            s = socket.socket(socket.AF_UNIX); s.bind("\(socket)"); s.listen(8); print("ready", flush=True)
            c = s.accept(); time.sleep(60)
            """])
        defer { listener.terminate() }
        _ = try await PrivateBus.line(from: listener.stdout)

        let result = try await runProgram(product("bleadvctl"), ["status", "--timeout", "1"],
                                          environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(socket)"])

        #expect(result.status == 1)
        #expect(result.errors == "bleadvctl: no answer from the system bus or bleadvd within 1 s; giving up (see --timeout)\n")
    }

    @Test("terminal escapes and direction overrides in the config are shown escaped in preview's error")
    func previewEscapesTheConfigsText() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("escape-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("bleadvd.toml").path
        try "[advertisement.door]\ntype = \"\\u001b]0;PWNED\\u0007\\u202e\"\n".write(toFile: path, atomically: true, encoding: .utf8)

        let result = try await runProgram(product("bleadvctl"), ["preview", "--config", path])

        #expect(result.status == 2)
        #expect(!result.errors.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{7}" || $0 == "\u{202E}" })
        #expect(result.errors.contains("\"\\u{1B}]0;PWNED\\u{7}\\u{202E}\" is not a type"), "\(result.errors)")
    }
}
