package import Peripheral

/// One request and its reply on wpa_supplicant's control interface: a whole command in one
/// datagram, never a line for wpa_cli's editor to split (``WPAControlSocket`` is the live one).
package protocol WPAControlling {
    /// wpa_supplicant's reply to `command`.
    /// - Throws: ``WPAFailure`` when no reply came.
    func request(_ command: String) throws(WPAFailure) -> String
}

/// Why a join through wpa_supplicant failed, in a line that never holds the password.
package struct WPAFailure: Error, CustomStringConvertible {
    /// The line.
    package let description: String
    /// A failure said in `description`.
    package init(_ description: String) { self.description = description }
}

/// Improv's join through wpa_supplicant, without NetworkManager: the conversation apart from the
/// socket, so that a test plays wpa_supplicant and drives the wait.
///
/// It adds a network marked `id_str "bleadvd-improv"` with WPA's key derived from the passphrase
/// (what wpa_supplicant's saved config can always hold; an SSID it could not is refused before
/// anything changes), selects it (wpa_supplicant leaves any
/// other network for it), and answers the address once wpa_supplicant is connected to it with
/// one; then it removes the networks it added before for the same SSID, enables again the
/// networks that were enabled before, and saves the config (which needs `update_config=1`). A
/// failed handshake (wpa_supplicant disables the network) or ``attempts`` seconds without a
/// connection removes the network again and enables the others: a join that did not complete
/// changes none of the networks that were there.
package struct WPASupplicantJoin<Control: WPAControlling> {
    /// The interface's control socket.
    let control: Control
    /// Its interface, for messages.
    let interface: String

    /// The mark on the networks this join adds.
    package static var mark: String { "bleadvd-improv" }
    /// How many times, a second apart, wpa_supplicant's state is asked before giving up.
    package static var attempts: Int { 60 }

    /// A join through `control`, wpa_supplicant's socket for `interface`.
    package init(control: Control, interface: String) {
        self.control = control
        self.interface = interface
    }

    /// A join that completed.
    package struct Joined: Equatable {
        /// The address wpa_supplicant reports for the interface.
        package let address: String
        /// Whether wpa_supplicant saved its config (`update_config=1` lets it).
        package let saved: Bool
    }

    /// Joins `credentials`' network, calling `pause` for a second between looks at the state.
    /// - Throws: ``WPAFailure`` when wpa_supplicant refused a step, the handshake failed or no
    ///   connection came; the networks that were there are as they were.
    package func join(_ credentials: Improv.Credentials, pause: () -> Void) throws(WPAFailure) -> Joined {
        if let refusal = Self.unsaved(credentials.ssid) { throw WPAFailure(refusal) }
        let key: [UInt8]?
        do { key = try credentials.preSharedKey() } catch { throw WPAFailure(error.description) }
        let ssid = Hex.encode(credentials.ssid)
        let enabled = try networks().filter { !$0.flags.contains("[DISABLED]") }.map(\.id)
        let added = try control.request("ADD_NETWORK").trimmed
        guard let id = Int(added), id >= 0 else {
            throw WPAFailure("wpa_supplicant on \(interface) did not add a network: \(Untrusted.quoted(added))")
        }
        do {
            try expectOK("SET_NETWORK \(id) ssid \(ssid)", else: "wpa_supplicant refused the SSID \(ssid) (hex)")
            try expectOK("SET_NETWORK \(id) id_str \"\(Self.mark)\"", else: "wpa_supplicant refused the network's mark")
            try expectOK(Self.secret(id, key), else: key == nil ? "wpa_supplicant refused an open network" : "wpa_supplicant refused the key")
            try expectOK("SELECT_NETWORK \(id)", else: "wpa_supplicant did not select the network")
            let address = try connected(id, ssid: ssid, pause: pause)
            try removeEarlier(than: id)
            restore(enabled)
            return Joined(address: address, saved: try control.request("SAVE_CONFIG").trimmed == "OK")
        } catch {
            _ = try? control.request("REMOVE_NETWORK \(id)")
            restore(enabled)
            throw error
        }
    }

    /// The request that sets network `id`'s key: WPA-PSK's 256-bit key in 64 hex digits
    /// (``Improv/Credentials/preSharedKey()``), never the passphrase, which wpa_supplicant saves
    /// in quotes where a `#` after a quote ends the line at its next start; none for an open
    /// network.
    static func secret(_ id: Int, _ key: [UInt8]?) -> String {
        guard let key else { return "SET_NETWORK \(id) key_mgmt NONE" }
        return "SET_NETWORK \(id) psk \(Hex.encode(key))"
    }

    /// Why wpa_supplicant's config file could not hold `ssid`, or nil when it can. It saves an
    /// SSID of printable ASCII in quotes as it is (any other in hex), and its reader ends a line
    /// at a `#` outside a pair of quotes: such an SSID with a quote and a `#` could come back
    /// cut, or stop wpa_supplicant from starting at all.
    static func unsaved(_ ssid: [UInt8]) -> String? {
        guard ssid.allSatisfy({ (0x20...0x7E).contains($0) }), ssid.contains(UInt8(ascii: "\"")), ssid.contains(UInt8(ascii: "#"))
        else { return nil }
        return "the SSID \(Untrusted.quoted(String(decoding: ssid, as: UTF8.self))) has a quote and a \"#\", which wpa_supplicant's"
            + " config file cannot hold (it would be cut at the next start): not joined, nothing changed"
    }

    /// A network wpa_supplicant lists.
    struct Network {
        let id: Int
        let flags: String
    }

    /// The networks wpa_supplicant has: `LIST_NETWORKS`, a header and a tab-separated row each.
    func networks() throws(WPAFailure) -> [Network] {
        try control.request("LIST_NETWORKS").split(separator: "\n").dropFirst().compactMap { row in
            let fields = row.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count >= 4, let id = Int(fields[0]) else { return nil }
            return Network(id: id, flags: String(fields[3]))
        }
    }

    /// Waits for wpa_supplicant to be connected to network `id` with an address.
    private func connected(_ id: Int, ssid: String, pause: () -> Void) throws(WPAFailure) -> String {
        var state = ""
        for _ in 0..<Self.attempts {
            let status = Self.fields(try control.request("STATUS"))
            state = status["wpa_state"] ?? ""
            if state == "COMPLETED", status["id"] == String(id), let address = status["ip_address"], !address.isEmpty {
                return Untrusted.shown(address)
            }
            if try networks().first(where: { $0.id == id })?.flags.contains("TEMP-DISABLED") == true {
                throw WPAFailure("wpa_supplicant's handshake with \(ssid) (hex) failed: a wrong password?")
            }
            pause()
        }
        throw WPAFailure("no connection with an address to \(ssid) (hex) within \(Self.attempts) s (wpa_supplicant: wpa_state=\(Untrusted.shown(state)))")
    }

    /// Removes the networks this program added before `id` for the same SSID (an old password).
    private func removeEarlier(than id: Int) throws(WPAFailure) {
        let ours = try control.request("GET_NETWORK \(id) ssid").trimmed
        for other in try networks() where other.id != id {
            guard try control.request("GET_NETWORK \(other.id) id_str").trimmed == "\"\(Self.mark)\"",
                try control.request("GET_NETWORK \(other.id) ssid").trimmed == ours
            else { continue }
            _ = try control.request("REMOVE_NETWORK \(other.id)")
        }
    }

    /// Enables `networks` again (SELECT_NETWORK disabled them), whatever the join's end.
    private func restore(_ networks: [Int]) {
        for other in networks { _ = try? control.request("ENABLE_NETWORK \(other)") }
    }

    private func expectOK(_ command: String, else failure: @autoclosure () -> String) throws(WPAFailure) {
        guard try control.request(command).trimmed == "OK" else { throw WPAFailure(failure()) }
    }

    /// `key=value` lines, as STATUS answers.
    static func fields(_ reply: String) -> [String: String] {
        var fields: [String: String] = [:]
        for line in reply.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return fields
    }
}

extension String {
    /// Without the line break wpa_supplicant ends most replies with.
    fileprivate var trimmed: String {
        var text = Substring(self)
        while let last = text.last, last == "\n" || last == " " { text.removeLast() }
        return String(text)
    }
}
