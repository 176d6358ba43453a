import AdvertiserControl
import ArgumentParser
import DBus
import Events
import Peripheral
#if canImport(Glibc)
import Glibc
#endif

extension Bleadvctl {
    struct Pair: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Open a pairing window and show each central that pairs in it.",
            discussion: """
                For the window's length (the config's [pairing] window_seconds unless given) \
                the adapter takes new bonds. Each request is printed as it comes: with \
                method = "passkey" (the default), the 6-digit code to type on the central; \
                with "numeric-comparison", the code to compare, answered here (y or n on \
                standard input). Those two refuse a central that asks for just works (a bond \
                without a code), printed as refused with why; the window stays open. \
                method = "just-works", only when the config asks for it, lets any central in \
                range bond with no code. A central past its [pairing] attempts is refused; \
                another central's requests (a stranger's wrong codes) cost it none. The window's events \
                and codes come to this command alone. It closes once one central bonded, when \
                its time runs out, when a reload turns pairing off, or when this command ends \
                (Ctrl-C, killed): no one else would see its codes. Needs root.

                Secured characteristics are served to the centrals bonded in bleadvd's windows \
                alone (BlueZ lets any local user make a bond). --adopt ADDRESS lets in a bond \
                made otherwise (before bleadvd was installed, say): no window opens.

                Exit status: 0 a central bonded (or was adopted); 1 the window closed without a \
                bond; 2 pairing is off, no GATT service is configured, or the central to adopt \
                is not bonded; 3 bleadvd is not running.
                """)
        @Argument(help: ArgumentHelp("How long the window stays open (1 to 3600; default: the config's).", valueName: "seconds"))
        var seconds: UInt32?
        @Option(help: ArgumentHelp("Record the existing bond with this central (e.g. AA:BB:CC:DD:EE:FF) as bleadvd's, so that it may use secured characteristics; opens no window.", valueName: "address"))
        var adopt: String?

        func validate() throws {
            if let seconds, !(1...3600).contains(seconds) {
                throw ValidationError("a pairing window lasts 1 to 3600 seconds, not \(seconds)")
            }
            if let adopt {
                guard seconds == nil else { throw ValidationError("--adopt opens no window: give it no seconds") }
                if let refusal = Bond.refusal(ofAddress: adopt) { throw ValidationError(refusal) }
            }
        }

        func run() throws {
            if let adopt {
                try withDaemon(timeout: 30) { try $0.adopt(adopt) }
                return try emit("adopted \(adopt.uppercased()): it may use secured characteristics\n")
            }
            let seconds = seconds ?? 0
            try runOnEventLoop(exitingWith: 0) { loop in try await Self.pair(seconds: seconds, on: loop) }
        }

        /// What the command follows: the window's signals and the lines typed on standard input.
        enum Input {
            case signal(DBusMessage)
            /// A line; nil once standard input ended.
            case line(String?)
            case connectionEnded
            /// bleadvd left the bus (stopped, or killed before it could say the window closed).
            case bleadvdGone
        }

        /// Opens the window and follows its `Pairing` signals until a central bonded (returns)
        /// or the window closed (throws). Answers to comparisons are read from standard input
        /// on the loop, beside the signals: the window's end shows while a question waits.
        static func pair(seconds: UInt32, on loop: EventLoop) async throws {
            let connection = try await connectToSystemBus(on: loop)
            // Subscribed before the window opens: no request can come unseen. The daemon sends
            // them to this connection alone.
            let signals = try await connection.signals(matching: [DBusMatchRule(
                sender: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface, member: ControlAPI.Pairing.name)])
            let reply: [DBusValue]
            do {
                reply = try await connection.call(
                    destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface,
                    member: ControlAPI.Method.pair.name, [.uint32(seconds)], expecting: "su")
            } catch let error as DBusError {
                throw Failure(dbus: error)
            }
            let length = reply[1].uint32 ?? seconds
            try emit("pairing window open for \(length) s (\(Untrusted.escaped(reply[0].string ?? ""))); pair from the central now\n")
            // Whatever happens to the signals, the command ends a little after the window.
            Task(executorPreference: loop) {
                try? await Task.sleep(for: .seconds(Int(length) + 5))
                printError("the window's end was not announced; giving up")
                Glibc.exit(Failure.failed)
            }
            let (inputs, feed) = AsyncStream<Input>.makeStream()
            Task(executorPreference: loop) {
                for await message in signals { feed.yield(.signal(message)) }
                feed.yield(.connectionEnded)
            }
            Task(executorPreference: loop) {
                guard (try? await connection.departure(of: ControlAPI.busName)) != nil else { return }
                feed.yield(.bleadvdGone)
            }
            let answers = StandardInputLines(loop: loop) { feed.yield(.line($0)) }
            // The centrals whose comparison waits for a line, the first asked first.
            var asking: [String] = []
            for await input in inputs {
                switch input {
                case .connectionEnded:
                    throw Failure(code: Failure.failed, message: "the system bus connection ended")
                case .bleadvdGone:
                    if !asking.isEmpty { try emit("\n") }
                    throw Failure(code: Failure.failed, message: "bleadvd left the bus, and the pairing window with it; no central bonded")
                case .line(let line):
                    guard !asking.isEmpty else { continue }
                    let answer = line?.lowercased() ?? ""
                    await confirm(asking.removeFirst(), matches: answer == "y" || answer == "yes", on: connection)
                    if let next = asking.first { try emit("\(Central.named(next)): answer for it now [y/N] ") }
                case .signal(let message):
                    guard let signal = ControlAPI.Pairing(body: message.body) else { continue }
                    let (central, detail) = (signal.central, signal.detail)
                    let who = Central.named(central)
                    switch signal.event {
                    case "requested":
                        try emit(detail.isEmpty ? "\(who): pairing (just works)\n" : "\(who): type \(Untrusted.escaped(detail)) on the central\n")
                    case "confirm":
                        try emit("\(who): does the central show \(Untrusted.escaped(detail))? [y/N] ")
                        asking.append(central)
                        answers.start()
                    case "paired":
                        try emit("\(who): paired and bonded\n")
                        return
                    case "refused":
                        asking.removeAll { $0 == central }
                        try emit(detail.isEmpty ? "\(who): refused\n" : "\(who): refused: \(Untrusted.escaped(detail))\n")
                    case "failed":
                        asking.removeAll { $0 == central }
                        try emit("\(who): did not bond (a wrong code, or the central gave up)\n")
                    case "closed":
                        if !asking.isEmpty { try emit("\n") }
                        throw Failure(code: Failure.failed, message: "the pairing window closed (\(Untrusted.escaped(detail.isEmpty ? "its time ran out" : detail))); no central bonded")
                    default:
                        continue
                    }
                }
            }
        }

        /// Sends the answer to a comparison; a failure to deliver it is said, not fatal.
        static func confirm(_ central: String, matches: Bool, on connection: DBusConnection) async {
            do {
                _ = try await connection.call(
                    destination: ControlAPI.busName, path: ControlAPI.path, interface: ControlAPI.interface,
                    member: ControlAPI.Method.confirm.name, [.string(central), .boolean(matches)], expecting: "")
            } catch {
                printError("\(Central.named(central)): the answer did not reach bleadvd: \((error as? DBusError)?.message ?? "\(error)")")
            }
        }
    }

    struct Bonds: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the centrals bonded with the adapter.",
            discussion: "One line per central: its address, then its name when it gave one. A bonded central uses encrypted characteristics without pairing again; bleadvctl forget removes it. Needs root.")
        @Flag(help: "Print a JSON array of {\"central\", \"name\"}.")
        var json = false
        @OptionGroup var bus: BusOptions

        func run() throws {
            let bonds = try withDaemon(bus) { saidWhetherBlueZAnswers(try $0.bonds(), by: $0) }
            if json {
                try emit("[" + bonds.map { "{\"central\": \(StatusFormat.quote($0.central)), \"name\": \(StatusFormat.quote($0.name ?? ""))}" }
                    .joined(separator: ", ") + "]\n")
            } else {
                try emit(bonds.map { ([Untrusted.escaped($0.central)] + ($0.name.map { [WatchFormat.field($0)] } ?? [])).joined(separator: " ") + "\n" }.joined())
            }
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove the bond with a central.",
            discussion: """
                It must pair again (in a window) before it may use encrypted characteristics. \
                Only a bond that a bleadvd pairing window made is removed (bleadvd records them in its state directory); \
                a bond a desktop's own pairing made, a keyboard's say, is left unless --any is given. \
                Exit status 2 when no central with that address is bonded, 1 when bleadvd did not make the bond. Needs root.
                """)
        @Argument(help: ArgumentHelp("The central's address, e.g. AA:BB:CC:DD:EE:FF.", valueName: "address"))
        var address: String
        @Flag(help: "Remove the bond even when no bleadvd pairing window made it.")
        var any = false
        @OptionGroup var bus: BusOptions

        func validate() throws {
            if let refusal = Bond.refusal(ofAddress: address) { throw ValidationError(refusal) }
        }

        func run() throws {
            try withDaemon(bus) { try $0.forget(address, any: any) }
        }
    }
}
