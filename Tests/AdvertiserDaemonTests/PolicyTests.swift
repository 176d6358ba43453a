import AdvertiserControl
import Foundation
import PeripheralMocks
import TestSupport
import Testing

/// systemd/org.bleadvd.Advertiser.conf on a bus with the system bus's default-deny policy.
@Suite("The D-Bus policy")
struct PolicyTests {
    static let policy = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("systemd/org.bleadvd.Advertiser.conf").path

    func call(_ session: DaemonSession, _ member: String, _ arguments: [String] = [], as user: String? = nil) async throws -> ProgramResult {
        let send = ["/usr/bin/dbus-send", "--bus=\(session.bus.address)", "--print-reply", "--dest=org.bleadvd.Advertiser",
                    "/org/bleadvd/Advertiser", "org.bleadvd.Advertiser1.\(member)"] + arguments
        guard let user else { return try await runProgram(send[0], Array(send.dropFirst())) }
        return try await runProgram("/usr/sbin/runuser", ["-u", user, "--"] + send)
    }

    @Test("root may own the name and call On")
    func rootMayCallOn() async throws {
        let session = try await DaemonSession(bus: try PrivateBus(systemPolicy: [Self.policy]))

        let result = try await call(session, "On", ["array:string:door"])

        #expect(result.status == 0, "\(result.errors)")
        #expect(session.mock.startAdvertisingCallCount == 2)
    }

    @Test("an unprivileged user gets AccessDenied for each method the contract keeps to root and its group",
          arguments: ControlAPI.Method.allCases.filter { !$0.isOpenToEveryone })
    func othersAreDenied(method: ControlAPI.Method) async throws {
        let session = try await DaemonSession(bus: try PrivateBus(systemPolicy: [Self.policy]))

        let result = try await call(session, method.name, as: "nobody")

        #expect(result.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(result.errors)")
        #expect(session.mock.stopAdvertisingCallCount == 0)
    }

    @Test("an unprivileged user may call each method the contract opens to everyone",
          arguments: ControlAPI.Method.allCases.filter(\.isOpenToEveryone))
    func othersMayRead(method: ControlAPI.Method) async throws {
        let session = try await DaemonSession(bus: try PrivateBus(systemPolicy: [Self.policy]))

        let result = try await call(session, method.name, as: "nobody")

        #expect(!result.errors.contains("AccessDenied"), "\(result.errors)")
    }

    @Test("an unprivileged user gets AccessDenied for a member the contract does not have")
    func othersAreDeniedUnknownMembers() async throws {
        let session = try await DaemonSession(bus: try PrivateBus(systemPolicy: [Self.policy]))

        let result = try await call(session, "Frobnicate", as: "nobody")

        #expect(result.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(result.errors)")
    }

    /// The policy with its group section naming `nogroup`, nobody's group, instead of bleadvd
    /// (which this machine need not have): what the section grants its members. (The real group
    /// is tested in the systemd test bed, scenario 60.)
    @Test("a member of the policy's group may call each method of the contract", arguments: ControlAPI.Method.allCases)
    func groupMayCallAll(method: ControlAPI.Method) async throws {
        let policy = try String(contentsOfFile: Self.policy, encoding: .utf8)
            .replacingOccurrences(of: "<policy group=\"bleadvd\">", with: "<policy group=\"nogroup\">")
        #expect(policy.contains("<policy group=\"nogroup\">"))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bleadvd-policy-\(UUID()).conf").path
        try policy.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let session = try await DaemonSession(bus: try PrivateBus(systemPolicy: [file]))

        let result = try await call(session, method.name, as: "nobody")

        #expect(!result.errors.contains("AccessDenied"), "\(result.errors)")
    }
}
