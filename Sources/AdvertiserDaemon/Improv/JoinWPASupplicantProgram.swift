#if canImport(Glibc)
import Glibc
#endif
import Peripheral
import Support

/// `join-wpa-supplicant`, Improv's join program for a box whose Wi-Fi wpa_supplicant manages
/// without NetworkManager: bleadvd's own executable, called by that name (a link in
/// /usr/libexec/bleadvd). bleadvd runs it as a join program (``ProgramJoiner``): the SSID in
/// `IMPROV_SSID_HEX`, the password on standard input. It types both again (``Improv/Credentials``),
/// then joins through wpa_supplicant's control socket, one request a datagram
/// (``WPASupplicantJoin``), never through wpa_cli's line editor.
package enum JoinWPASupplicantProgram {
    /// The name it answers to.
    package static var name: String { "join-wpa-supplicant" }
    /// The most of standard input read: a password is at most 64 bytes.
    package static var inputLimit: Int { 4096 }

    /// What `--help` prints.
    package static var usage: String {
        """
        usage: IMPROV_SSID_HEX=HEX \(name) < password

        Improv's join program for wpa_supplicant without NetworkManager ([improv] join =
        "/usr/libexec/bleadvd/\(name)"). Joins the network whose SSID is IMPROV_SSID_HEX (1 to 32
        bytes, in hex) with the password on standard input (none for an open network; else 8 to 63
        printable ASCII characters or 64 hex digits; one final line break is dropped), through
        wpa_supplicant's control socket, and prints the address it got. wpa_supplicant is given
        WPA's key (as wpa_passphrase prints it), never the passphrase, so that the config it saves
        always reads back; an SSID of printable characters with a quote and a '#' is refused.

        BLEADVD_WPA_CTRL: the control socket folder (default /run/wpa_supplicant);
        BLEADVD_WPA_INTERFACE: the interface (default: the first socket not a P2P device's);
        RUNTIME_DIRECTORY: where this program's own socket goes (default /tmp).

        Exit status: 0 joined (the address on the first line); 1 not joined (why, in a line);
        2 no credentials (an SSID or a password that no network takes), or a usage error.
        """
    }

    /// Runs with `arguments` (without the program's name), `environment` and `input` (standard
    /// input, read up to ``inputLimit`` bytes and one more), writing lines with `say` and
    /// sleeping a second with `pause`; returns the exit status.
    package static func run(
        arguments: [String], environment: [String: String], input: [UInt8], say: (String) -> Void, pause: () -> Void
    ) -> Int32 {
        guard arguments.isEmpty else {
            say(usage)
            return arguments == ["--help"] || arguments == ["-h"] ? 0 : 2
        }
        guard let hex = environment["IMPROV_SSID_HEX"] else {
            say("IMPROV_SSID_HEX is not set: bleadvd runs this program for Improv (see --help)")
            return 2
        }
        guard let ssid = Hex.decode(hex) else {
            say("IMPROV_SSID_HEX is not hex: \(Untrusted.quoted(hex))")
            return 2
        }
        guard input.count <= inputLimit else {
            say("more than \(inputLimit) bytes on standard input: no password is")
            return 2
        }
        let password = input.last == 10 ? Array(input.dropLast()) : input
        guard let credentials = Improv.Credentials(ssid: ssid, password: password) else {
            say(Improv.Credentials.refusal(ssid: ssid, password: password) ?? "no credentials")
            return 2
        }
        let folder = environment["BLEADVD_WPA_CTRL"] ?? "/run/wpa_supplicant"
        guard let interface = environment["BLEADVD_WPA_INTERFACE"] ?? firstInterface(in: folder) else {
            say("no wpa_supplicant control socket in \(Untrusted.shown(folder)) that user \(userName()) may open (its config needs"
                + " ctrl_interface=DIR=\(Untrusted.shown(folder)) GROUP=netdev; bleadvd's unit, the drop-in join-wpa-supplicant.conf)")
            return 1
        }
        do {
            let control = try WPAControlSocket(server: "\(folder)/\(interface)", clientFolder: environment["RUNTIME_DIRECTORY"] ?? "/tmp")
            let joined = try WPASupplicantJoin(control: control, interface: Untrusted.shown(interface)).join(credentials, pause: pause)
            say(joined.address)
            if !joined.saved { say("wpa_supplicant did not save its config (update_config=1 lets it): the network is gone after a restart") }
            return 0
        } catch {
            say(error.description)
            return 1
        }
    }

    /// As wpa_cli chooses: the first control socket in `folder`, by name, that is not a P2P
    /// device's (`p2p-dev-wlan0` beside `wlan0`, where a scan request is ignored).
    static func firstInterface(in folder: String) -> String? {
        directoryNames(folder).filter { name in
            var info = stat()
            return !name.hasPrefix("p2p-dev-") && !name.hasPrefix(".") && stat("\(folder)/\(name)", &info) == 0
                && info.st_mode & S_IFMT == S_IFSOCK
        }.min()
    }

    private static func userName() -> String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "\(geteuid())" }
        return Untrusted.shown(String(cString: name))
    }
}
