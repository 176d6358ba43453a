import AdvertiserControl
import ArgumentParser
import Peripheral

extension Bleadvctl {
    struct Centrals: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the centrals connected now.",
            discussion: """
                One line per central: its address, the adapter, how long it has been connected, \
                whether it is bonded (bonded, not-bonded, or - when BlueZ did not say), the link's \
                ATT MTU (- until the central's first read or write: bluetoothd passes it with \
                those), how long it has done nothing, and the characteristics whose notifications \
                its MTU cuts (cut SERVICE.CHARACTERISTIC,...: a value sent was longer than \
                MTU - 3 bytes; BlueZ sends what the MTU carries), what it subscribed to \
                (subscribed SERVICE.CHARACTERISTIC,...: each one it subscribed to on this link, \
                where BlueZ gives every central a notification socket, from 5.71, for \
                characteristics that do not indicate: not a bonded central's that stayed on \
                from a link before; elsewhere BlueZ does not say which central subscribes, so those it \
                subscribed to while it was the only one connected; watch prints every \
                subscription), and the notifications it missed on those (dropped N: values a later \
                one replaced while its socket was full). Links this box made as a \
                central are listed too. bleadvctl watch prints each link's start and end as it happens.

                Example: bleadvctl centrals --json | jq -r '.[] | select(.bonded) | .central'
                """)
        @Flag(help: "Print a JSON array of {\"central\", \"adapter\", \"since_seconds\", \"idle_seconds\", \"bonded\", \"mtu\", \"cut\", \"subscribed\", \"dropped\"}.")
        var json = false
        @OptionGroup var bus: BusOptions

        func run() throws {
            let centrals = try withDaemon(bus) { saidWhetherBlueZAnswers(try $0.centrals(), by: $0) }.sorted { $0.address < $1.address }
            if json {
                try emit("[" + centrals.map { central in
                    "{\"central\": \(StatusFormat.quote(central.address)), \"adapter\": \(StatusFormat.quote(central.adapter)), "
                        + "\"since_seconds\": \(StatusFormat.number(central.sinceSeconds)), \"idle_seconds\": \(StatusFormat.number(central.idleSeconds)), "
                        + "\"bonded\": \(central.bonded.map { $0 ? "true" : "false" } ?? "null"), \"mtu\": \(central.mtu.map(String.init) ?? "null"), "
                        + "\"cut\": [" + central.cut.map { StatusFormat.quote($0) }.joined(separator: ", ") + "], "
                        + "\"subscribed\": [" + central.subscribed.map { StatusFormat.quote($0) }.joined(separator: ", ") + "], "
                        + "\"dropped\": \(central.dropped)}"
                }.joined(separator: ", ") + "]\n")
            } else {
                try emit(centrals.map { central in
                    [
                        Untrusted.escaped(central.address), Untrusted.escaped(central.adapter), "connected \(Self.duration(central.sinceSeconds))",
                        central.bonded.map { $0 ? "bonded" : "not-bonded" } ?? "-", "mtu \(central.mtu.map(String.init) ?? "-")",
                        "idle \(Self.duration(central.idleSeconds))",
                    ].joined(separator: " ") + (central.cut.isEmpty ? "" : " cut " + central.cut.map { Untrusted.escaped($0) }.joined(separator: ","))
                        + (central.subscribed.isEmpty ? "" : " subscribed " + central.subscribed.map { Untrusted.escaped($0) }.joined(separator: ","))
                        + (central.dropped == 0 ? "" : " dropped \(central.dropped)") + "\n"
                }.joined())
            }
        }

        /// `42s`, `3m05s`, `2h01m`.
        static func duration(_ seconds: Double) -> String {
            let whole = Int(seconds.rounded(.down))
            if whole < 60 { return "\(whole)s" }
            func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
            if whole < 3600 { return "\(whole / 60)m\(two(whole % 60))s" }
            return "\(whole / 3600)h\(two(whole / 60 % 60))m"
        }
    }

    struct Disconnect: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "End a central's link.",
            discussion: """
                bleadvd asks BlueZ to disconnect it; watch prints "disconnected ADDRESS ADAPTER \
                bleadvctl disconnect". A bonded central may connect again at once: to keep one \
                out, bleadvctl forget its bond too. Exit status 2 when no central with that \
                address is connected. Needs root.
                """)
        @Argument(help: ArgumentHelp("The central's address, e.g. AA:BB:CC:DD:EE:FF (bleadvctl centrals lists them).", valueName: "address"))
        var address: String
        @OptionGroup var bus: BusOptions

        func validate() throws {
            if let refusal = Bond.refusal(ofAddress: address) { throw ValidationError(refusal) }
        }

        func run() throws {
            try withDaemon(bus) { try $0.disconnect(address) }
        }
    }
}
