import AdvertiserControl
import DBus
import Foundation
import Peripheral
import TestSupport
import Testing

/// The real `bleadvd` program on a private bus with the BlueZ stand-in as bluetoothd.
@Suite("bleadvd as a process")
struct ProcessTests {
    static let config = """
        [advertisement.heart]
        local_name = "Thermo-1"
        service_uuids = ["180D", "180F"]
        """

    func startDaemon(_ bus: PrivateBus, config: String = Self.config, environment: [String: String] = [:]) throws -> (Child, NotifySocket, String) {
        try startBleadvd(on: bus, config: config, arguments: ["--log-level", "debug"], environment: environment)
    }

    /// What the stand-in holds: each registered advertisement's path and properties.
    func held(on bus: PrivateBus) async throws -> [DBusDictEntry]? {
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        let reply = try await connection.call(
            destination: "org.bluez", path: "/test", interface: "test.StandIn", member: "Advertisements")
        return reply[0].dictionaryEntries
    }

    func advertisementsHeld(on bus: PrivateBus) async throws -> Int {
        try await held(on: bus)?.count ?? -1
    }

    @Test("a bad config at start exits 2 with FILE:LINE: KEY on stderr")
    func badConfigAtStart() async throws {
        let bus = try await PrivateBus()
        let path = bus.folder.appendingPathComponent("bad.toml").path
        try "[advertisement.heart]\nlocal_name = \"x\"\nmajor = 1\n".write(toFile: path, atomically: true, encoding: .utf8)

        let result = try await runProgram(product("bleadvd"), ["--config", path], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])

        #expect(result.status == 2)
        #expect(result.errors == "<2>\(path):3: advertisement.heart.major: unknown key; known keys: altbeacon, appearance, bthome, data, discoverable, discoverable_timeout, duration, eddystone_tlm, eddystone_uid, eddystone_url, enabled, ibeacon, includes, local_name, manufacturer_data, max_interval_ms, min_interval_ms, priority, scan_response, secondary_channel, service_data, service_uuids, services, solicit_uuids, timeout, tx_power, type\n")
    }

    @Test("the join helper refuses to start where the config does not join through NetworkManager, exit 2, saying why", arguments: [
        "[advertisement.heart]\nlocal_name = \"x\"\n", "[improv]\njoin = \"/usr/local/bin/join-wifi\"\n",
    ])
    func joinHelperRefusesWithoutImprov(config: String) async throws {
        let bus = try await PrivateBus()
        let path = bus.folder.appendingPathComponent("bleadvd.toml").path
        try config.write(toFile: path, atomically: true, encoding: .utf8)

        let result = try await runProgram(product("bleadvd"), ["--join-helper", "--config", path], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])

        #expect(result.status == 2)
        #expect(result.errors.contains("join helper: refused: the config offers no Improv joining through NetworkManager"), "\(result.errors)")
    }

    @Test("both programs print the one version, which the Makefile gives the .deb and the man pages name")
    func version() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

        let daemon = try await runProgram(product("bleadvd"), ["--version"])
        let control = try await runProgram(product("bleadvctl"), ["--version"])
        let make = try await runProgram("/usr/bin/make", ["-s", "-C", root.path, "--eval", "version: ; @echo $(VERSION)", "version"])

        #expect(daemon.status == 0 && daemon.output == ControlAPI.version + "\n")
        #expect(control.status == 0 && control.output == ControlAPI.version + "\n")
        #expect(make.output == ControlAPI.version + "\n", "\(make.errors)")
        for page in ["bleadvd.8", "bleadvctl.1", "bleadvd.toml.5"] {
            let text = try String(contentsOf: root.appendingPathComponent("systemd/man/" + page), encoding: .utf8)
            #expect(text.hasPrefix(".TH ") && text.prefix { $0 != "\n" }.contains("\"bleadvd \(ControlAPI.version)\""), "\(page)")
        }
    }

    @Test("a bad command line exits 2 with one line, the argument escaped", arguments: [
        (["--adapter", ""], "bleadvd: --adapter \"\" is neither an adapter name (hci0) nor an address (00:1A:7D:DA:71:13) (see 'bleadvd --help')\n"),
        (["--adapter", "hci 0"], "bleadvd: --adapter \"hci 0\" is neither an adapter name (hci0) nor an address (00:1A:7D:DA:71:13) (see 'bleadvd --help')\n"),
        (["--adapter", "hci0\n"], "bleadvd: --adapter \"hci0\\n\" is neither an adapter name (hci0) nor an address (00:1A:7D:DA:71:13) (see 'bleadvd --help')\n"),
        (["--log-level", "\u{1B}]0;PWNED\u{7}"],
         "bleadvd: The value '\\u{1B}]0;PWNED\\u{7}' is invalid for '--log-level <level>'. Please provide one of the following:\\n  - trace\\n  - debug\\n  - info\\n  - notice\\n  - warning\\n  - error\\n  - critical (see 'bleadvd --help')\n"),
    ])
    func badCommandLine(arguments: [String], message: String) async throws {
        let bus = try await PrivateBus()

        let result = try await runProgram(product("bleadvd"), arguments, environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])

        #expect(result.status == 2)
        #expect(result.errors == message)
    }

    @Test("signals bleadvd does not act on are logged and ignored, and it still stops cleanly on SIGTERM")
    func otherSignalsIgnored() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startDaemon(bus)
        try await notify.waitFor("READY=1")

        for signal in [SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU] { kill(daemon.pid, signal) }
        let list = try await runProgram(product("bleadvctl"), ["list"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        kill(daemon.pid, SIGTERM)
        let status = await daemon.exitStatus()

        #expect(list.output == "heart\n")
        #expect(status == 0)
        let errors = String(decoding: daemon.stderr?.readToEndRetrying() ?? Data(), as: UTF8.self)
        for signal in [SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU] {
            #expect(errors.contains("<5>signal \(signal) ignored: bleadvd acts on TERM, INT and HUP only\n"))
        }
        _ = standIn
    }

    @Test("once ready, at the default log level, most of bleadvd's pages of the loader's relocations are no longer resident, and what runs next (a list, a reload) still works")
    func readOnlyPagesDropped() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startBleadvd(on: bus, config: Self.config)
        try await notify.waitFor("READY=1")

        let list = try await runProgram(product("bleadvctl"), ["list"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let reload = try await runProgram(product("bleadvctl"), ["reload"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let relocations = try await residentPages(of: ".rela.dyn", in: product("bleadvd"), pid: daemon.pid)
        kill(daemon.pid, SIGTERM)
        let status = await daemon.exitStatus()

        // ld.so reads every page of them at start, and nothing after: all resident, they were not
        // dropped. (A fault beside them, in the PLT, maps up to 16 of their pages again: the
        // kernel's fault-around.)
        #expect(relocations.pages > 32)
        #expect(relocations.resident * 2 < relocations.pages, "\(relocations.resident) of \(relocations.pages) pages resident")
        #expect(list.output == "heart\n")
        #expect(reload.status == 0)
        #expect(status == 0)
        _ = standIn
    }

    @Test("a page of bleadvd's file that was written in the process, as a debugger's breakpoint is, stays its own when a reload drops the read-only pages")
    func writtenPagesKept() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startBleadvd(on: bus, config: Self.config)
        try await notify.waitFor("READY=1")
        let pages = try await sectionPages(of: ".rela.dyn", in: product("bleadvd"), pid: daemon.pid)
        let page = pages.lowerBound + UInt(pages.count / 2)
        // Written back as it was, through /proc/PID/mem, as gdb writes a breakpoint: the kernel
        // gives the process a private copy of the page.
        let address = off_t(page) * off_t(sysconf(Int32(_SC_PAGESIZE)))
        let memory = open("/proc/\(daemon.pid)/mem", O_RDWR)
        var bytes: UInt64 = 0
        let copied = pread(memory, &bytes, 8, address) == 8 && pwrite(memory, &bytes, 8, address) == 8
        close(memory)
        try #require(copied)
        let before = try pagemapEntry(pid: daemon.pid, page: page)
        try #require(before & Self.presentNotFile == Self.present)

        let reload = try await runProgram(product("bleadvctl"), ["reload"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        let after = try pagemapEntry(pid: daemon.pid, page: page)
        kill(daemon.pid, SIGTERM)
        _ = await daemon.exitStatus()

        #expect(reload.status == 0)
        #expect(after & Self.presentNotFile == Self.present, "the written page was dropped: pagemap \(String(after, radix: 16))")
        _ = standIn
    }

    /// `/proc/PID/pagemap`'s bits: the page is present; it is a page of a file (not the process's own copy).
    static let present: UInt64 = 1 << 63
    static let presentNotFile: UInt64 = 1 << 63 | 1 << 61

    /// How many pages of `section` in `binary` process `pid` has resident, as the kernel says
    /// (`/proc/PID/pagemap`'s present bit), and how many it spans.
    func residentPages(of section: String, in binary: String, pid: pid_t) async throws -> (resident: Int, pages: Int) {
        let pages = try await sectionPages(of: section, in: binary, pid: pid)
        let resident = try pages.filter { try pagemapEntry(pid: pid, page: $0) & Self.present != 0 }.count
        return (resident, pages.count)
    }

    /// The pages (address / page size) that `section` of `binary` spans in process `pid`; the
    /// section's place from binutils' `readelf`, the binary's from `/proc/PID/maps`.
    func sectionPages(of section: String, in binary: String, pid: pid_t) async throws -> ClosedRange<UInt> {
        let headers = try await runOffPool("/usr/bin/readelf", ["-SW", binary])
        guard let fields = headers.split(separator: "\n").first(where: { $0.contains(" \(section) ") })?
            .split(separator: " ").map(String.init),
            let name = fields.firstIndex(of: section), fields.count > name + 4,
            let address = UInt(fields[name + 2], radix: 16), let size = UInt(fields[name + 4], radix: 16)
        else { throw TestFailure("no \(section) in readelf's sections of \(binary)") }
        let path = URL(fileURLWithPath: binary).resolvingSymlinksInPath().path
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        guard let line = maps.split(separator: "\n").first(where: { $0.hasSuffix(" " + path) && $0.split(separator: " ")[2] == "00000000" }),
            let base = UInt(line.prefix(while: { $0 != "-" }), radix: 16)
        else { throw TestFailure("\(path) is not mapped in process \(pid)") }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        return (base + address) / page...(base + address + size - 1) / page
    }

    /// The `/proc/PID/pagemap` entry of process `pid`'s page `page` (address / page size).
    func pagemapEntry(pid: pid_t, page: UInt) throws -> UInt64 {
        let pagemap = open("/proc/\(pid)/pagemap", O_RDONLY)
        guard pagemap >= 0 else { throw TestFailure("cannot open /proc/\(pid)/pagemap") }
        defer { close(pagemap) }
        var entry: UInt64 = 0
        guard pread(pagemap, &entry, 8, off_t(page * 8)) == 8 else { throw TestFailure("cannot read /proc/\(pid)/pagemap") }
        return entry
    }

    @Test("a log line written after stderr's reader went away does not kill bleadvd (SIGPIPE)")
    func closedStandardError() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startDaemon(bus)
        try await notify.waitFor("READY=1")

        try daemon.stderr?.close()
        kill(daemon.pid, SIGUSR1)
        let list = try await runProgram(product("bleadvctl"), ["list"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        kill(daemon.pid, SIGTERM)
        let status = await daemon.exitStatus()

        #expect(list.output == "heart\n")
        #expect(status == 0)
        _ = standIn
    }

    @Test("when the system bus goes away, bleadvd exits 1 at once with one line saying so, and bleadvctl exits 3")
    func busLost() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startDaemon(bus)
        try await notify.waitFor("READY=1")

        bus.stop()
        let status = await daemon.exitStatus()
        let client = try await runProgram(product("bleadvctl"), ["status"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])

        let errors = String(decoding: daemon.stderr?.readToEndRetrying() ?? Data(), as: UTF8.self)
        #expect(status == 1)
        #expect(errors.split(separator: "\n").filter { $0.hasPrefix("<2>") } == ["<2>lost the system bus; exiting so that systemd restarts bleadvd"])
        #expect(client.status == 3)
        #expect(client.errors.hasPrefix("bleadvctl: cannot reach the system bus, so bleadvd is not running there"))
        _ = standIn
    }

    @Test("READY=1 comes once the enabled advertisements are registered with BlueZ")
    func readyAfterRegistration() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startDaemon(bus)

        try await notify.waitFor("READY=1")

        #expect(try await advertisementsHeld(on: bus) == 1)
        #expect(notify.messages.contains { $0.contains("STATUS=1 of 1 enabled advertisement(s) on air") })
        _ = (standIn, daemon)
    }

    @Test("READY=1 still comes when BlueZ refuses, with STATUS saying why")
    func readyWithReasonWhenRefused() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let control = try await DBusConnection.connect(to: .address(bus.address))
        _ = try await control.call(
            destination: "org.bluez", path: "/test", interface: "test.StandIn", member: "SetFreeInstances",
            [.string("hci0"), .byte(0)])
        let (daemon, notify, _) = try startDaemon(bus)

        try await notify.waitFor("READY=1")

        let ready = notify.messages.first { $0.contains("READY=1") } ?? ""
        #expect(ready.contains("STATUS=0 of 1 enabled advertisement(s) on air; heart: retrying (the adapter has no free advertising slot"))
        _ = (standIn, daemon)
    }

    @Test("when systemd asks for a watchdog, WATCHDOG=1 comes")
    func watchdog() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startDaemon(bus, environment: ["WATCHDOG_USEC": "200000"])
        try await notify.waitFor("READY=1")

        try await notify.waitFor("WATCHDOG=1")

        _ = (standIn, daemon)
    }

    // How long it may take is ShutdownTests' business, on the injected clock.
    @Test("SIGTERM unregisters everything, says STOPPING=1 and exits 0")
    func sigtermCleansUp() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startDaemon(bus)
        try await notify.waitFor("READY=1")

        kill(daemon.pid, SIGTERM)
        let status = await daemon.exitStatus()

        #expect(status == 0)
        #expect(try await advertisementsHeld(on: bus) == 0)
        try await notify.waitFor("STOPPING=1", within: .seconds(1))
        _ = standIn
    }

    @Test("SIGHUP with a bad config keeps everything on air")
    func sighupBadConfig() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, path) = try startDaemon(bus)
        try await notify.waitFor("READY=1")
        try "[advertisement.heart\n".write(toFile: path, atomically: true, encoding: .utf8)

        kill(daemon.pid, SIGHUP)
        try await notify.waitFor("RELOADING=1")

        #expect(try await advertisementsHeld(on: bus) == 1)
        #expect(notify.messages.contains { $0.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") })
        let list = try await runProgram(product("bleadvctl"), ["list"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        #expect(list.output == "heart\n")
        _ = standIn
    }

    @Test("a reload of a file that crashes the TOML parser (found by libFuzzer) is refused, and bleadvd stays up")
    func reloadParserCrash() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, path) = try startDaemon(bus)
        try await notify.waitFor("READY=1")
        try "\n[\n\n".write(toFile: path, atomically: true, encoding: .utf8)

        let reload = try await runProgram(product("bleadvctl"), ["reload"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])

        #expect(reload.status == 2)
        #expect(reload.errors.contains("\(path): crashes the TOML parser (signal 6 in a child process; nothing was read)"), "\(reload.errors)")
        #expect(try await advertisementsHeld(on: bus) == 1)
        let list = try await runProgram(product("bleadvctl"), ["list"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        #expect(list.output == "heart\n")
        _ = (standIn, daemon)
    }

    @Test("a file that crashes the TOML parser at start is a config error: exit 2 and one line")
    func startParserCrash() async throws {
        let bus = try await PrivateBus()
        let (daemon, _, path) = try startDaemon(bus, config: "\n[\n\n")

        let status = await daemon.exitStatus()

        let errors = String(decoding: daemon.stderr?.readToEndRetrying() ?? Data(), as: UTF8.self)
        #expect(status == 2)
        #expect(errors == "<2>\(path): crashes the TOML parser (signal 6 in a child process; nothing was read): look for a table header, key, array or inline table cut short or not closed, e.g. a '[' at the end of a line or '[ }'\n")
    }

    func mapsLibCrypto(_ daemon: Child) throws -> Bool {
        try String(contentsOfFile: "/proc/\(daemon.pid)/maps", encoding: .utf8).contains("/libcrypto.so")
    }

    @Test("with no encryption key in its config, bleadvd never loads libcrypto")
    func noLibCryptoWithoutAKey() async throws {
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startDaemon(bus)

        try await notify.waitFor("READY=1")

        #expect(try await advertisementsHeld(on: bus) == 1)
        #expect(try !mapsLibCrypto(daemon))
        _ = standIn
    }

    @Test("with an encryption key, bleadvd loads libcrypto and the sensor goes to BlueZ sealed for the adapter's address")
    func libCryptoForAKey() async throws {
        let key = "231d39c1d7cc1ab1aee224cd096db932"
        let bus = try await PrivateBus()
        let standIn = try await BlueZStandIn(bus: bus)
        let (daemon, notify, _) = try startDaemon(bus, config: """
            [advertisement.kitchen.bthome]
            temperature = 21.5
            encryption_key = "\(key)"
            """)

        try await notify.waitFor("READY=1")

        let properties = try #require(try await held(on: bus)?.first?.value.variantDictionary)
        let sealed = try #require(properties["ServiceData"]?.dictionaryEntries?.first?.value.variantValue?.bytes)
        // The stand-in's first adapter, hci0, has the address 00:AA:01:00:00:00.
        let opened = BTHome.open(sealed, key: BTHome.Key(hex: key)!, address: [0x00, 0xAA, 0x01, 0x00, 0x00, 0x00])
        // Encrypted flag; packet id 0; temperature 21.5 °C (0x0866 hundredths).
        #expect(opened == [0x41, 0x00, 0x00, 0x02, 0x66, 0x08])
        #expect(try mapsLibCrypto(daemon))
        _ = standIn
    }
}
