import DBus
import Foundation
import Logging
import Peripheral
import PeripheralBlueZ
import TestSupport

/// A private bus with the stand-in, and the manager under test on a connection of its own.
struct StandInSession {
    let bus: PrivateBus
    var standIn: BlueZStandIn
    let connection: DBusConnection
    let manager: BlueZPeripheralManager

    /// - Parameters:
    ///   - admits: the centrals the manager serves secured characteristics to.
    ///   - callTimeout: how long the manager waits for the stand-in's answers.
    ///   - logger: where the manager logs.
    init(
        adapters: [String] = ["hci0"], kernelRelease: String = "6.1.0-56-amd64", bus: PrivateBus? = nil,
        admits: @escaping @Sendable (String) -> Bool = { _ in true }, callTimeout: Duration = .seconds(10),
        logger: Logger = Logger(label: "test")
    ) async throws {
        self.bus = if let bus { bus } else { try await PrivateBus() }
        standIn = try await BlueZStandIn(bus: self.bus, adapters: adapters)
        connection = try await DBusConnection.connect(to: .address(self.bus.address))
        manager = BlueZPeripheralManager(connection: connection, logger: logger, kernelRelease: kernelRelease, admits: admits, callTimeout: callTimeout)
    }

    /// Calls the stand-in's control object. It goes over the manager's own connection, so it
    /// reaches the stand-in after every signal the manager sent before it.
    @discardableResult
    func control(_ member: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await connection.call(
            destination: BlueZ.service, path: "/test", interface: "test.StandIn", member: member, arguments)
    }

    /// Calls the stand-in's control object by its unique name: it answers after giving up
    /// org.bluez too.
    @discardableResult
    func controlByName(_ member: String, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await connection.call(
            destination: standIn.uniqueName, path: "/test", interface: "test.StandIn", member: member, arguments)
    }

    /// Removes the device of `central` from `adapter` (`Adapter1.RemoveDevice`, as any local
    /// user may); returns after bluetoothd's InterfacesRemoved, which comes before its reply.
    func removeDevice(_ central: String, adapter: String = "hci0") async throws {
        let path = try DBusObjectPath("/org/bluez/\(adapter)/dev_" + central.replacingOccurrences(of: ":", with: "_"))
        _ = try await connection.call(
            destination: BlueZ.service, path: try DBusObjectPath("/org/bluez/\(adapter)"), interface: "org.bluez.Adapter1",
            member: "RemoveDevice", [.objectPath(path)])
    }

    /// What the stand-in did, in order (calls it received and made).
    func calls() async throws -> [String] {
        try await control("Calls")[0].stringArray ?? []
    }

    /// The advertisements the stand-in holds, by object path, with the properties it parsed.
    func advertisements() async throws -> [String: [String: DBusValue]] {
        var result: [String: [String: DBusValue]] = [:]
        for entry in try await control("Advertisements")[0].dictionaryEntries ?? [] {
            result[entry.key.string ?? ""] = entry.value.variantDictionary
        }
        return result
    }
}

/// The events of a stream as they come, read one by one; a read fails instead of hanging when
/// no event comes.
actor EventLog {
    private var buffer: [PeripheralEvent] = []
    private var waiter: CheckedContinuation<PeripheralEvent?, Never>?
    private var consumer: Task<Void, Never>?

    /// Starts reading `stream`.
    static func reading(_ stream: AsyncStream<PeripheralEvent>) async -> EventLog {
        let log = EventLog()
        await log.consume(stream)
        return log
    }

    private func consume(_ stream: AsyncStream<PeripheralEvent>) {
        consumer = Task {
            for await event in stream { self.append(event) }
        }
    }

    private func append(_ event: PeripheralEvent) {
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: event)
        } else {
            buffer.append(event)
        }
    }

    private func giveUp() {
        waiter?.resume(returning: nil)
        waiter = nil
    }

    /// The next event; `limit` guards against a hang (``eventually(_:within:every:isolation:_:)``).
    func next(within limit: Duration = .seconds(60)) async throws -> PeripheralEvent {
        if !buffer.isEmpty { return buffer.removeFirst() }
        let timer = Task {
            // A cancelled timer (the event came) must not give up on the next read's behalf.
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            self.giveUp()
        }
        defer { timer.cancel() }
        guard let event = await withCheckedContinuation({ waiter = $0 }) else {
            throw TestFailure("no event within \(limit)")
        }
        return event
    }

    /// The next `count` events.
    func next(_ count: Int) async throws -> [PeripheralEvent] {
        var events: [PeripheralEvent] = []
        for _ in 0..<count { events.append(try await next()) }
        return events
    }
}

extension PeripheralEvent {
    /// The event with its run of bluetoothd left out, for tests about its kind and subject.
    var anyGeneration: PeripheralEvent {
        switch self {
        case .bluezAppeared: .bluezAppeared()
        case .bluezVanished: .bluezVanished()
        case .adapterAdded(let adapter, _): .adapterAdded(adapter)
        case .adapterRemoved(let adapter, _): .adapterRemoved(adapter)
        case .adapterPowered(let adapter, let on, _): .adapterPowered(adapter, on)
        case .released(let id): .released(RegistrationID(id.rawValue))
        case .gatt, .paired, .bondEnded, .connected, .disconnected, .pairable: self
        }
    }

    /// The run of bluetoothd the event came from, if it names one.
    var generation: StackGeneration? {
        switch self {
        case .bluezAppeared(let generation), .bluezVanished(let generation), .adapterAdded(_, let generation),
             .adapterRemoved(_, let generation), .adapterPowered(_, _, let generation):
            generation
        case .released(let id): id.generation
        case .gatt, .paired, .bondEnded, .connected, .disconnected, .pairable: nil
        }
    }
}
