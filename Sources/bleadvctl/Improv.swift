import AdvertiserControl
import ArgumentParser

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
                abstract: "Allow a client to send Wi-Fi credentials now.",
                discussion: """
                    Prints how long the authorization holds. Exit status 2 when Improv is not \
                    configured, needs no authorization, is not on air now (the box is on \
                    Wi-Fi, or was provisioned), or the box is joining a network. Needs root.
                    """)
            @OptionGroup var bus: BusOptions

            func run() throws {
                let seconds = try withDaemon(bus) { try $0.improvAuthorize() }
                try emit("authorized: a client may send Wi-Fi credentials for the next \(seconds) s\n")
            }
        }
    }
}
