import AdvertiserControl
import ArgumentParser
import Peripheral

extension Bleadvctl {
    /// `bleadvctl improv`: Improv Wi-Fi, which puts this box on a network from Home Assistant.
    struct Improv: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Improv Wi-Fi: let Home Assistant (or improv-wifi.com) give this box Wi-Fi credentials.",
            discussion: """
                With an [improv] table in the config, bleadvd advertises the Improv service \
                and its state (provisioned once the box joined). Unless the table says authorization = "none", \
                a client may send credentials only after 'bleadvctl improv authorize', for the \
                table's authorization_seconds (60 by default).
                """,
            subcommands: [Authorize.self])

        struct Authorize: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Allow the client connected now to send Wi-Fi credentials.",
                discussion: """
                    Connect the Improv client first (Home Assistant's Improv set-up connects when \
                    it asks you to authorize). The authorization is that central's alone: until it \
                    runs out, its link ends, or the join it allowed ends, bleadvd ignores every \
                    other central's Improv frames, so a stranger in range can neither join nor \
                    disturb it; a client that connects again needs a new one. With \
                    several centrals connected, name the one by its address (the refusal lists \
                    them). Prints the central and how long the authorization holds. Exit status 2 \
                    when Improv is not configured, needs no authorization, is not on air now (the \
                    box is on Wi-Fi, or was provisioned), the box is joining a network, or no \
                    central, several, or not the one named, is connected. Needs root.
                    """)
            @Argument(help: ArgumentHelp("The central to authorize, e.g. AA:BB:CC:DD:EE:FF (needed when several are connected).", valueName: "address"))
            var address: String?
            @OptionGroup var bus: BusOptions

            func validate() throws {
                if let address, let refusal = Bond.refusal(ofAddress: address) { throw ValidationError(refusal) }
            }

            func run() throws {
                let (seconds, central) = try withDaemon(bus) { try $0.improvAuthorize(address ?? "") }
                try emit("authorized \(Untrusted.escaped(central)): it may send Wi-Fi credentials for the next \(seconds) s\n")
            }
        }
    }
}
