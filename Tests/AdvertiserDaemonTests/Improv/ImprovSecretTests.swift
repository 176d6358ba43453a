import AdvertiserControl
import AdvertiserDaemon
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// The password a client sends reaches no text bleadvd writes: random frames (a seeded
/// generator: credentials whole, in pieces from several centrals, with a bad checksum, cut
/// short, with a NUL in the password, among random bytes and other commands, centrals leaving
/// mid-frame) against the daemon with a join program that repeats its standard input (the
/// password) on its output, as a careless script does. Every journal line, every value
/// notified to a central and `bleadvctl status` are searched for the password and its hex.
@Suite("Improv's password in no text bleadvd writes", .timeLimit(.minutes(3)))
struct ImprovSecretTests {
    /// SplitMix64: the same frames for the same seed.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func frame(_ command: UInt8, _ data: [UInt8]) -> [UInt8] {
        let head: [UInt8] = [command, UInt8(data.count)] + data
        return head + [UInt8(truncatingIfNeeded: head.reduce(0) { $0 + Int($1) })]
    }

    static func wifi(ssid: [UInt8], password: [UInt8]) -> [UInt8] {
        frame(0x01, [UInt8(ssid.count)] + ssid + [UInt8(password.count)] + password)
    }

    /// The frames of one run: whole, broken and foreign ones, each carrying `secret` where it
    /// can.
    static func frames(_ secret: [UInt8], using random: inout Generator) -> [[UInt8]] {
        (0..<40).map { _ in
            let ssid = (0..<Int.random(in: 1...32, using: &random)).map { _ in UInt8.random(in: 0x20...0x7E, using: &random) }
            let whole = wifi(ssid: ssid, password: secret)
            switch Int.random(in: 0..<7, using: &random) {
            case 0: return whole
            case 1: return whole.dropLast() + [whole.last! &+ 1]  // a bad checksum
            case 2: return Array(whole[..<Int.random(in: 1..<whole.count, using: &random)])  // cut short
            case 3: return wifi(ssid: ssid, password: Array(secret[..<6]) + [0] + Array(secret[6...]))  // a NUL in it
            case 4: return wifi(ssid: ssid, password: secret + [0xFF, 0xFE])  // not UTF-8
            case 5: return [[0x02, 0x00, 0x02], [0x03, 0x00, 0x03], [0x04, 0x00, 0x04]][Int.random(in: 0..<3, using: &random)]
            default: return (0..<Int.random(in: 1...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) } + secret
            }
        }
    }

    /// A join program that repeats what it was given (the password) on its standard output and
    /// error, and exits `status`.
    static func echoingProgram(in folder: URL, status: Int) throws -> String {
        let path = folder.appendingPathComponent("join-echo").path
        try writeExecutable("#!/bin/sh\nread -r password\necho \"$password\"\necho \"$password\" >&2\nexit \(status)\n", to: path)
        return path
    }

    @Test("random frames leave the password in no journal line, notification or status, whether the join program fails or succeeds",
          arguments: [(UInt64(1), 1), (2, 0), (3, 1), (4, 0)])
    func passwordInNoText(seed: UInt64, status: Int) async throws {
        var random = Generator(state: seed)
        let secret = (0..<12).map { _ in UInt8.random(in: 0x61...0x7A, using: &random) }
        let session = try await ImprovDaemonTests().session(onDBus: true, program: { try Self.echoingProgram(in: $0, status: status) })
        let centrals = ["AA:BB:CC:DD:EE:01", "AA:BB:CC:DD:EE:02", "AA:BB:CC:DD:EE:03"]

        for frame in Self.frames(secret, using: &random) {
            let central = centrals[Int.random(in: 0..<centrals.count, using: &random)]
            let cut = Int.random(in: 0...frame.count, using: &random)
            for piece in [Array(frame[..<cut]), Array(frame[cut...])] where !piece.isEmpty {
                session.mock.emit(.gatt(GATTEvent(ImprovDaemonTests.command, .written(piece, .bytes([])), central: central)))
            }
            if Int.random(in: 0..<8, using: &random) == 0 { session.mock.emit(.disconnected(central: central, adapter: "hci0")) }
            // A join runs its program on the wall's time, watched on the manual clock.
            for _ in 0..<3 {
                await session.clock.waitForSleepers()
                session.clock.advance(by: .milliseconds(100))
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let status = try await session.ctl("status", "--json").output

        let texts = session.logs.all + [status]
        let needles = [String(decoding: secret, as: UTF8.self), String(decoding: secret[..<6], as: UTF8.self), Hex.encode(secret)]
        let leaks = texts.filter { text in needles.contains { text.contains($0) } }
        let notified = session.mock.calls.updatedValues.map(\.value).filter { value in
            value.count >= 6 && (0...(value.count - 6)).contains { Array(value[$0..<($0 + 6)]) == Array(secret[..<6]) }
        }
        #expect(session.logs.all.contains { $0.contains("joining") }, "no credentials frame was taken: the run proves nothing")
        #expect(leaks.isEmpty, "\(leaks)")
        #expect(notified.isEmpty, "\(notified)")
    }
}
