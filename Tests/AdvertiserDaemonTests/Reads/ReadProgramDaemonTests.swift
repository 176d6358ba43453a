import AdvertiserControl
import AdvertiserDaemon
import DBus
import Foundation
import Peripheral
import PeripheralMocks
import TestSupport
import Testing

/// A characteristic read from a program, in the daemon over the mock: a central's read runs the
/// program (a real process) and gets what it printed, which becomes the value in force.
@Suite("Characteristics read from a program, in the daemon", .timeLimit(.minutes(3)))
struct ReadProgramDaemonTests {
    static let temperature = GATTCharacteristicID(service: "pi", characteristic: "temperature")
    static let app = RegistrationID("/org/bleadvd/gatt/app1")

    let folder: ScratchFolder
    let program: String
    let runs: String

    init() throws {
        folder = try ScratchFolder("reads")
        program = folder.url.appendingPathComponent("cpu-temp").path
        runs = folder.url.appendingPathComponent("runs").path
        // Counts its runs in a file of its own, as the test bed's program does.
        try writeExecutable("#!/bin/sh\necho run >> '\(runs)'\necho 48.25\n", to: program)
    }

    func session() async throws -> DaemonSession {
        try await DaemonSession(config: DaemonSession.config + "\n" + ConfigFixtures.piTemperature(program), folder: folder) { mock in
            mock.scriptRegisterApplication(.always(.success(Self.app)))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptAgent()
            mock.scriptUpdateValue(.always(.success(())))
        }
    }

    func runCount() -> Int {
        ((try? String(contentsOfFile: runs, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    @Test("a central's read gets what the program printed, in the characteristic's format, and it becomes the value in force")
    func readRunsTheProgram() async throws {
        let session = try await session()

        let answer = try await session.mock.centralReads(Self.temperature, central: "AA:BB:CC:DD:EE:01")

        #expect(answer == [0xD9, 0x12])  // 4825
        try await eventually("status shows 48.25") { await session.daemon.advertising.status()["pi"]?.values["temperature"] == "48.25" }
        #expect(session.mock.calls.updatedValues.last?.value == [0xD9, 0x12])
        #expect(runCount() == 1)
    }

    @Test("the registered characteristic carries the read programs' handler, with no value before the first run")
    func registeredAnsweredOnRead() async throws {
        let session = try await session()

        let registered = session.mock.calls.registeredApplications.last?.application[Self.temperature]

        #expect(registered?.onRead != nil)
        #expect(registered?.value == [])
    }

    @Test("set refuses a characteristic read from a program, naming the program, and runs nothing")
    func setRefused() async throws {
        let session = try await session()

        let refusal = await #expect(throws: PeripheralError.self) { try await session.daemon.advertising.set("pi", ["temperature": .string("20")]) }

        #expect(refusal?.message.contains("is read from \"\(program)\" when a central asks; it is not set") == true)
        #expect(runCount() == 0)
    }

    @Test("the program's output reaches no journal line")
    func outputNotJournaled() async throws {
        try writeExecutable("#!/bin/sh\necho 'SECRET-OUTPUT'\n", to: program)
        let session = try await session()

        await #expect(throws: GATTReadError.self) { try await session.mock.centralReads(Self.temperature) }

        #expect(session.logs.all.contains { $0.contains("pi.temperature") && $0.contains("is not a number for sint16") })
        #expect(!session.logs.all.joined().contains("SECRET"))
    }

    // A program killed at its timeout that the kernel keeps from being reaped for a while (one
    // in uninterruptible sleep on a hung NFS or sysfs read is the case in the field): here a
    // tracer that never waits for it holds its zombie, which its parent cannot reap until the
    // tracer lets go (ptrace(2), "a zombie ptracee is only visible to its ptracer"). The
    // program allows any tracer, for a kernel with Yama's ptrace_scope 1.
    @Test("a program killed at its timeout that cannot be reaped yet stalls nothing: status answers while it waits, and it is reaped once it can be")
    func unreapableProgramStallsNothing() async throws {
        let pidFile = folder.url.appendingPathComponent("pid").path
        try writeExecutable(
            """
            #!/usr/bin/env python3
            import ctypes, os, time
            ctypes.CDLL(None).prctl(0x59616d61, ctypes.c_ulong(2**64 - 1), 0, 0, 0)
            open('\(pidFile).new', 'w').write(str(os.getpid()))
            os.rename('\(pidFile).new', '\(pidFile)')
            time.sleep(300)

            """, to: program)
        let session = try await DaemonSession(
            config: DaemonSession.config + "\n" + ConfigFixtures.piTemperature(program) + "read_timeout = 1\n", folder: folder
        ) { mock in
            mock.scriptRegisterApplication(.always(.success(Self.app)))
            mock.scriptUnregisterApplication(.always(.success(())))
            mock.scriptAgent()
            mock.scriptUpdateValue(.always(.success(())))
        }
        let read = Task { try? await session.mock.centralReads(Self.temperature) }
        try await eventually("the program started") { FileManager.default.fileExists(atPath: pidFile) }
        let pid = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8)))
        let tracer = Process()
        tracer.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // It lets go after 20 s: time enough for the answer below however loaded the machine,
        // and an end for a loop that waits for the reaping (it would answer only then).
        tracer.arguments = ["python3", "-c", "import ctypes, time; ctypes.CDLL(None).ptrace(0x4206, \(pid), None, None); time.sleep(20)"]
        try tracer.run()
        defer { kill(tracer.processIdentifier, SIGKILL) }
        try await eventually("the program is traced") { Self.tracer(of: pid) != 0 }
        session.clock.advance(by: .seconds(1))
        try await eventually("the program is killed, a zombie its tracer holds") { Self.state(of: pid) == "Z" }

        let asked = ContinuousClock.now
        _ = await session.daemon.advertising.status()
        let answered = asked.duration(to: .now)

        #expect(Self.state(of: pid) == "Z", "status answered after \(answered), once the program was reaped")
        _ = await read.value
        kill(tracer.processIdentifier, SIGKILL)
        try await eventually("the program is reaped once its tracer is gone") { Self.state(of: pid) == nil }
    }

    /// The state letter of `pid` in /proc (Z: a zombie), nil once it is reaped.
    static func state(of pid: Int32) -> Substring? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        return stat.split(separator: ")").last?.split(separator: " ").first
    }

    /// The pid of `pid`'s tracer (0: none), from /proc.
    static func tracer(of pid: Int32) -> Int32 {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("TracerPid:") }
        return line.flatMap { Int32($0.dropFirst("TracerPid:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
    }
}
