import Foundation
import TestSupport
import Testing

/// systemd/join-wpa-supplicant, the package's join program for a box whose Wi-Fi wpa_supplicant
/// manages, run as bleadvd runs a join program (the SSID in `IMPROV_SSID_HEX`, the password on
/// standard input) against a wpa_cli that records what it is asked and answers as wpa_supplicant
/// 2.10's does. Scenario 67 runs it against the real wpa_supplicant, in bleadvd's sandbox.
@Suite("The join program for wpa_supplicant")
struct JoinWpaSupplicantTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("systemd/join-wpa-supplicant").path

    /// wpa_cli's stand-in. It holds networks 0 (one the program added before for "Home", with
    /// its mark, disabled), 2 (an admin's for "Home", no mark, enabled) and the new one, 1; `WPA_MODE=joins`
    /// connects network 1 with an address, `wrong-key` disables it as a failed handshake does.
    /// Network 1 is listed once added. Each call is logged: `argv` and its arguments, or, run without a command (interactive),
    /// `stdin` and each line it reads.
    static let wpaCLI = """
        #!/bin/sh
        while [ $# -gt 0 ]; do case $1 in -i) iface=$2; shift 2 ;; -p|-s) shift 2 ;; *) break ;; esac; done
        # Any other interface than the one wpa_supplicant manages has no networks.
        [ "$iface" = wlan0 ] || { echo FAIL; exit 0; }
        if [ $# -eq 0 ]; then
          while IFS= read -r line; do printf 'stdin %s\\n' "$line" >> "$WPA_LOG"; echo OK; done
          exit 0
        fi
        printf 'argv %s\\n' "$*" >> "$WPA_LOG"
        case $1 in
          add_network) : > "$WPA_LOG.added"; echo 1 ;;
          get_network)
            case $3 in
              psk) echo '*' ;;
              ssid) echo '"Home"' ;;
              id_str) if [ "$2" = 2 ]; then echo FAIL; else echo '"bleadvd-improv"'; fi ;;
            esac ;;
          status)
            if [ "$WPA_MODE" = joins ]; then printf 'bssid=02:00:00:00:00:00\\nid=1\\nwpa_state=COMPLETED\\nip_address=192.168.4.2\\n'
            else echo wpa_state=SCANNING; fi ;;
          list_networks)
            flags='[CURRENT]'; [ "$WPA_MODE" = joins ] || flags='[TEMP-DISABLED]'
            printf 'network id / ssid / bssid / flags\\n0\\tHome\\tany\\t[DISABLED]\\n2\\tHome\\tany\\t\\n'
            [ ! -e "$WPA_LOG.added" ] || printf '1\\tHome\\tany\\t%s\\n' "$flags" ;;
          *) echo OK ;;
        esac
        """

    /// Runs the program with `password` on its standard input, SSID "Home", against the
    /// stand-in in `mode`; returns what it did and the stand-in's log.
    func join(password: String, mode: String) async throws -> (result: ProgramResult, log: [String]) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("join-wpa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let wpaCLI = folder.appendingPathComponent("wpa_cli").path
        try writeExecutable(Self.wpaCLI, to: wpaCLI)
        // The control socket folder as wpa_supplicant 2.10 makes it for wlan0: the interface's
        // socket and its P2P device's, which sorts first.
        let ctrl = folder.appendingPathComponent("ctrl")
        try FileManager.default.createDirectory(at: ctrl, withIntermediateDirectories: true)
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for name in ["p2p-dev-wlan0", "wlan0"] {
            let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            sockets.append(descriptor)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let path = Array(ctrl.appendingPathComponent(name).path.utf8CString)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.map { UInt8(bitPattern: $0) }) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            #expect(bound == 0)
        }
        let input = folder.appendingPathComponent("password").path
        try password.write(toFile: input, atomically: true, encoding: .utf8)
        let log = folder.appendingPathComponent("log").path
        let result = try await runProgram("/bin/sh", ["-c", "exec \"$0\" < \"$1\"", Self.script, input], environment: [
            "PATH": "\(folder.path):/usr/bin:/bin", "IMPROV_SSID_HEX": "486f6d65", "BLEADVD_WPA_CTRL": ctrl.path,
            "RUNTIME_DIRECTORY": folder.path, "WPA_LOG": log, "WPA_MODE": mode,
        ])
        let lines = (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
        return (result, lines)
    }

    @Test("joined through the interface's socket, not its P2P device's, it prints the address wpa_supplicant reports as its first line and exits 0")
    func joinedPrintsAddress() async throws {
        let (result, _) = try await join(password: "hunter22", mode: "joins")

        #expect(result.status == 0, "\(result.output) \(result.errors)")
        #expect(result.output.split(separator: "\n").first == "192.168.4.2")
    }

    @Test("the password reaches wpa_cli on its standard input alone, never on a command line, where ps shows it")
    func passwordNeverAnArgument() async throws {
        let (_, log) = try await join(password: "correct horse \"battery\"", mode: "joins")

        #expect(log.contains("stdin set_network 1 psk \"correct horse \"battery\"\""), "\(log)")
        #expect(!log.contains { $0.hasPrefix("argv") && $0.contains("battery") }, "\(log)")
    }

    @Test("the network gets the SSID as hex and bleadvd's mark")
    func networkMarked() async throws {
        let (_, log) = try await join(password: "hunter22", mode: "joins")

        #expect(log.contains("argv set_network 1 ssid 486f6d65"))
        #expect(log.contains("argv set_network 1 id_str \"bleadvd-improv\""))
    }

    @Test("joined, the networks it added before for the same SSID are removed, an admin's kept, and the config saved")
    func joinedReplacesOwnNetworks() async throws {
        let (_, log) = try await join(password: "hunter22", mode: "joins")

        #expect(log.contains("argv remove_network 0"))
        #expect(!log.contains("argv remove_network 2"))
        #expect(!log.contains("argv remove_network 1"))
        #expect(log.last == "argv save_config")
    }

    @Test("the new network is selected, so that it is tried even while the box is on another one")
    func networkSelected() async throws {
        let (_, log) = try await join(password: "hunter22", mode: "joins")

        #expect(log.contains("argv select_network 1"))
        #expect(!log.contains("argv enable_network 1"))
    }

    @Test("joined, the networks enabled before (the admin's) are enabled again, and no disabled one is")
    func joinedRestoresEnabled() async throws {
        let (_, log) = try await join(password: "hunter22", mode: "joins")

        let enabled = log.filter { $0.hasPrefix("argv enable_network") }
        #expect(enabled == ["argv enable_network 2"], "\(log)")
        #expect(log.firstIndex(of: "argv enable_network 2")! > log.firstIndex(of: "argv select_network 1")!)
    }

    @Test("not joined, the networks enabled before are enabled again")
    func failedRestoresEnabled() async throws {
        let (_, log) = try await join(password: "wrong-password", mode: "wrong-key")

        #expect(log.filter { $0.hasPrefix("argv enable_network") } == ["argv enable_network 2"], "\(log)")
    }

    @Test("a failed handshake (wpa_supplicant disables the network) removes the network and exits 1 saying a wrong password")
    func wrongKey() async throws {
        let (result, log) = try await join(password: "wrong-password", mode: "wrong-key")

        #expect(result.status == 1)
        #expect(result.output.contains("a wrong password?"), "\(result.output)")
        #expect(log.contains("argv remove_network 1"))
        #expect(!log.contains("argv remove_network 0"))
    }

    @Test("an empty password is an open network: no password is set")
    func openNetwork() async throws {
        let (_, log) = try await join(password: "", mode: "joins")

        #expect(log.contains("argv set_network 1 key_mgmt NONE"))
        #expect(!log.contains { $0.hasPrefix("stdin") })
    }

    @Test("without a control socket it may open, it says what wpa_supplicant's config and bleadvd's unit need, and exits 1")
    func noSocket() async throws {
        let result = try await runProgram("/bin/sh", ["-c", "exec \"$0\" < /dev/null", Self.script], environment: [
            "IMPROV_SSID_HEX": "486f6d65", "BLEADVD_WPA_CTRL": "/nonexistent",
        ])

        #expect(result.status == 1)
        #expect(result.output.contains("no wpa_supplicant control socket in /nonexistent"), "\(result.output)")
        #expect(result.output.contains("GROUP=netdev"))
    }
}
