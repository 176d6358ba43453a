import AdvertiserControl
import DBus
import Foundation
import TestSupport
import Testing

/// The control contract (`ControlAPI.Method`, `ControlAPI.signals`, `ControlAPI.errorNames`)
/// against what others read: the introspection committed for them and bleadvd(8). (The bus
/// policy is held to it in PolicyTests.)
@Suite("The control contract")
struct ContractTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    /// The interface as installed in /usr/share/dbus-1/interfaces for code generators and readers.
    static let committed = repository.appendingPathComponent("systemd/org.bleadvd.Advertiser1.xml")
    static let header = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <!-- bleadvd's control interface, on the system bus as org.bleadvd.Advertiser at
             /org/bleadvd/Advertiser; see bleadvd(8). Errors: org.bleadvd.Error.<Code>.
             Written by the test "the running daemon's introspection is the committed interface
             file" from the running daemon (BLEADVD_WRITE_CONTRACT=1 rewrites it); edit
             ControlAPI.Method and ControlAPI.signals instead. -->
        <node>

        """

    /// The daemon's own introspection of its control interface, as a file of its own.
    func introspectedInterface() async throws -> String {
        let session = try await DaemonSession(onDBus: true)
        let client = try await DBusConnection.connect(to: .address(session.bus.address))
        let reply = try await client.call(
            destination: ControlAPI.busName, path: ControlAPI.path, interface: "org.freedesktop.DBus.Introspectable",
            member: "Introspect", expecting: "s")
        let xml = reply[0].string ?? ""
        let start = try #require(xml.range(of: "  <interface name=\"\(ControlAPI.interface)\">\n"))
        let end = try #require(xml.range(of: "  </interface>\n", range: start.upperBound..<xml.endIndex))
        return Self.header + xml[start.lowerBound..<end.upperBound] + "</node>\n"
    }

    @Test("the running daemon's introspection is the committed interface file")
    func introspectionIsCommitted() async throws {
        let live = try await introspectedInterface()
        if ProcessInfo.processInfo.environment["BLEADVD_WRITE_CONTRACT"] == "1" {
            try live.write(to: Self.committed, atomically: true, encoding: .utf8)
        }

        let committed = try String(contentsOf: Self.committed, encoding: .utf8)

        #expect(committed == live, "systemd/org.bleadvd.Advertiser1.xml differs from the daemon's; run the test with BLEADVD_WRITE_CONTRACT=1 and review the diff")
    }

    @Test("the introspection declares every method and signal of the contract with its signature")
    func introspectionDeclaresTheContract() async throws {
        let live = try await introspectedInterface()

        for method in ControlAPI.Method.all {
            let arguments = (method.inputs.map { ($0, "in") } + method.outputs.map { ($0, "out") })
                .map { "<arg name=\"\($0.0.name)\" type=\"\($0.0.type.signature)\" direction=\"\($0.1)\"/>" }
            #expect(live.contains("<method name=\"\(method.name)\">"), "\(method.name)")
            for argument in arguments { #expect(live.contains(argument), "\(method.name): \(argument)") }
        }
        for signal in ControlAPI.signals {
            let arguments = signal.arguments.map { "<arg name=\"\($0.name)\" type=\"\($0.type.signature)\"/>" }.joined(separator: "\n      ")
            #expect(live.contains("<signal name=\"\(signal.name)\">\n      \(arguments)\n    </signal>"), "\(signal.name): \(arguments)")
        }
    }

    @Test("bleadvd(8) names every method, signal and error of the contract")
    func manualNamesTheContract() throws {
        let manual = try String(contentsOf: Self.repository.appendingPathComponent("systemd/man/bleadvd.8"), encoding: .utf8)

        let members = ControlAPI.Method.all.map { "\($0.name)(" } + ControlAPI.signals.map { "signal \($0.name)(" }
        let errors = ControlAPI.errorNames.map { ".B \($0.rawValue)\n" }

        #expect(members.filter { !manual.contains($0) } == [])
        #expect(errors.filter { !manual.contains($0) } == [])
    }
}
