@testable import AdvertiserDaemon
import Events
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// The alias component in process over the mock: what it sets on which adapter, what it keeps to
/// put back, and what it puts back.
@Suite("The adapter's alias", .timeLimit(.minutes(3)))
struct AdapterAliasTests {
    static let hci0 = AdapterCapabilities(name: "hci0", address: "54:48:E6:8F:80:A5", alias: "raspberrypi", systemName: "raspberrypi")
    static let hci1 = AdapterCapabilities(name: "hci1", address: "00:1A:7D:DA:71:13", alias: "dongle", systemName: "raspberrypi")

    struct Harness {
        let mock = MockPeripheralManager()
        let folder: ScratchFolder
        let logs = LogLines()
        let loop: EventLoop

        init(_ adapters: [AdapterCapabilities] = [AdapterAliasTests.hci0, AdapterAliasTests.hci1]) throws {
            folder = try ScratchFolder("alias")
            loop = try EventLoop.onNewThread(name: "alias-test")
            mock.scriptAdapters(.always(.success(adapters)))
            mock.scriptSetAlias(.always(.success(())))
        }

        func component(_ alias: String?, adapter: String? = nil) -> AdapterAlias {
            AdapterAlias(alias: alias, adapter: adapter, manager: mock, stateDirectory: folder.url.path, logger: logs.logger(), executor: loop)
        }

        var recorded: String { (try? String(contentsOf: folder.url.appendingPathComponent("alias"), encoding: .utf8)) ?? "" }
    }

    @Test("the alias is set on the first adapter when an adapter appears, and the system's name is what is put back")
    func setOnTheFirstAdapter() async throws {
        let h = try Harness()
        let alias = h.component("Kitchen lamp")

        await alias.take(())

        #expect(h.mock.calls.aliases.map { "\($0.adapter)=\($0.alias)" } == ["hci0=Kitchen lamp"])
        #expect(h.recorded == "54:48:E6:8F:80:A5\t\n")
    }

    @Test("the adapter the config names gets it, and an alias of its own is what is put back")
    func setOnTheNamedAdapter() async throws {
        let h = try Harness()
        let alias = h.component("Kitchen lamp", adapter: "00:1a:7d:da:71:13")

        await alias.take(())
        await alias.putBack()

        #expect(h.mock.calls.aliases.map { "\($0.adapter)=\($0.alias)" } == ["hci1=Kitchen lamp", "hci1=dongle"])
        #expect(h.recorded == "")
    }

    @Test("an alias already there is not set again")
    func notSetTwice() async throws {
        var hci0 = Self.hci0
        hci0.alias = "Kitchen lamp"
        let h = try Harness([hci0])

        await h.component("Kitchen lamp").take(())

        #expect(h.mock.calls.aliases.isEmpty)
    }

    @Test("after a kill, the next run puts back what the first kept, not the alias it found (its own)")
    func putBackAfterAKill() async throws {
        let h = try Harness()
        await h.component("Kitchen lamp").take(())
        var changed = Self.hci0
        changed.alias = "Kitchen lamp"
        h.mock.scriptAdapters(.always(.success([changed])))

        let next = h.component("Kitchen lamp")
        await next.take(())
        await next.putBack()

        #expect(h.mock.calls.aliases.map(\.alias) == ["Kitchen lamp", ""])
    }

    @Test("a reload without alias puts back what was there; without alias at all nothing is touched")
    func reloadWithoutAlias() async throws {
        let h = try Harness()
        let alias = h.component("Kitchen lamp")
        await alias.take(())

        await alias.reconfigure(nil)
        await alias.take(())

        #expect(h.mock.calls.aliases.map(\.alias) == ["Kitchen lamp", ""])
        #expect(h.logs.all.last == "notice: hci0: alias put back to the system's name")
    }

    @Test("an alias BlueZ refuses is said in the journal, and the record keeps what to put back")
    func refusedIsSaid() async throws {
        let h = try Harness()
        h.mock.scriptSetAlias(.always(.failure(PeripheralError(.failed, "org.bluez.Error.Failed"))))

        await h.component("Kitchen lamp").take(())

        #expect(h.logs.all.last?.hasPrefix("warning: hci0: the alias \"Kitchen lamp\" was not set:") == true)
        #expect(h.recorded == "54:48:E6:8F:80:A5\t\n")
    }

    @Test("a record that is not as bleadvd writes it is refused in one line naming it, and nothing is set back from it")
    func corruptRecord() async throws {
        let h = try Harness()
        try "54:48:E6:8F:80:A5 raspberrypi\n".write(to: h.folder.url.appendingPathComponent("alias"), atomically: true, encoding: .utf8)

        await h.component("Kitchen lamp").putBack()

        #expect(h.mock.calls.aliases.isEmpty)
        #expect(h.logs.all.last?.contains("holds a line that is not an address and an alias in hex") == true)
    }
}

/// The alias in the daemon over the mock: set at start, put back at stop.
@Suite("The adapter's alias, in the daemon", .timeLimit(.minutes(3)))
struct AliasDaemonTests {
    @Test("the daemon sets the config's alias as it starts, BlueZ and the adapter there already, and puts the system's name back when it stops")
    func setAtStartPutBackAtStop() async throws {
        let session = try await DaemonSession(config: "alias = \"Kitchen lamp\"\n" + DaemonSession.config) { mock in
            mock.scriptSetAlias(.always(.success(())))
        }
        try await eventually("the alias is set, with no event from BlueZ") { session.mock.calls.aliases.count == 1 }

        session.stop()
        _ = await session.running.result

        #expect(session.mock.calls.aliases.map(\.alias) == ["Kitchen lamp", ""])
        #expect(session.logs.all.contains { $0.contains("hci0: alias put back to the system's name") })
    }
}
