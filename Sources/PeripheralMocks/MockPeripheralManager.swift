public import Peripheral
import Synchronization

#if canImport(Testing)
import Testing
#endif

/// A `PeripheralManaging` for tests: counts every call, records the arguments, answers with
/// what the test scripted, and lets the test inject events. A call the test did not script is
/// recorded as a test issue (under Swift Testing) and fails with ``MockError/unscripted(_:)``,
/// naming the call, so a surprise never passes silently.
public final class MockPeripheralManager: PeripheralManaging, Sendable {
    /// A scripted answer: a fixed result for every call, or one result per call in order.
    public enum Script<Value: Sendable>: Sendable {
        /// Every call gets this result.
        case always(Result<Value, PeripheralError>)
        /// Each call takes the next result; a call after the last is unscripted.
        case sequence([Result<Value, PeripheralError>])
        /// Every call waits until its task is cancelled, then throws `CancellationError`: a
        /// bluetoothd that never answers, behind a client that gives up when asked.
        case hangs
        /// Every call waits for ever, cancelled or not: the worst a peer and its client can do.
        /// Whatever promises a deadline must keep it without the call's help.
        case neverAnswers
    }

    struct State {
        var adapters: Script<[AdapterCapabilities]>?
        var powerOn: Script<Void>?
        var start: Script<RegistrationID>?
        var stop: Script<Void>?
        var update: Script<Void>?
        var refresh: Script<Void>?
        var reregister: Script<Bool>?
        var registerApplication: Script<RegistrationID>?
        var unregisterApplication: Script<Void>?
        var updateValue: Script<Void>?
        var audit: Script<[RegistrationAudit]>?
        var registerAgent: Script<RegistrationID>?
        var unregisterAgent: Script<Void>?
        var setPairable: Script<Void>?
        var bonds: Script<[Bond]>?
        var removeBond: Script<Void>?
        var setAlias: Script<Void>?
        var disconnect: Script<Void>?
        /// What `unanswered()` says.
        var unanswered: UnansweredCall?
        /// What `notificationsDropped()` says.
        var dropped: [String: Int] = [:]
        var calls = Calls()
        var listeners: [AsyncStream<PeripheralEvent>.Continuation] = []
        var eventsFailure: PeripheralError?
        /// The calls that never answer (``Script/neverAnswers``), held so they stay pending.
        var neverAnswered: [UnsafeContinuation<Void, Never>] = []
        /// The kind of each identity a registration handed out, for its unregistering.
        var kinds: [RegistrationID: RegistrationSubject.Kind] = [:]
    }

    /// Everything the mock was asked, in order per kind of call.
    public struct Calls: Sendable {
        /// How many times `adapters()` was called.
        public var adapters = 0
        /// The adapters `powerOn(adapter:)` was called with.
        public var poweredOn: [String] = []
        /// The advertisements `register` was called with, and the adapter.
        public var started: [(advertisement: Advertisement, adapter: String)] = []
        /// The advertisements' identities `unregister` was called with.
        public var stopped: [RegistrationID] = []
        /// The identities and advertisements `updateAdvertisement` was called with.
        public var updated: [(id: RegistrationID, advertisement: Advertisement)] = []
        /// The identities `refreshAdvertisement` was called with.
        public var refreshed: [RegistrationID] = []
        /// The identities `reregisterIfDropped` was called with.
        public var reregistered: [RegistrationID] = []
        /// The applications `register` was called with, and the adapter.
        public var registeredApplications: [(application: GATTApplication, adapter: String)] = []
        /// The applications' identities `unregister` was called with.
        public var unregisteredApplications: [RegistrationID] = []
        /// The values `updateValue` was called with, the characteristic and the application.
        public var updatedValues: [(value: [UInt8], characteristic: GATTCharacteristicID, application: RegistrationID)] = []
        /// The central each of ``updatedValues`` was for (nil: every subscriber).
        public var notifiedCentrals: [String?] = []
        /// How many times `audit()` was called.
        public var audits = 0
        /// The agents' methods and deciders `register` was called with.
        public var registeredAgents: [(method: PairingMethod, decider: any PairingDecider)] = []
        /// The agent's identities `unregister` was called with.
        public var unregisteredAgents: [RegistrationID] = []
        /// What `setPairable` was called with, in order.
        public var pairable: [(pairable: Bool, adapter: String)] = []
        /// The adapters `bonds(adapter:)` was called with.
        public var bondQueries: [String] = []
        /// The centrals and adapters `removeBond` was called with.
        public var removedBonds: [(central: String, adapter: String)] = []
        /// The centrals and adapters `disconnect` was called with.
        public var disconnected: [(central: String, adapter: String)] = []
        /// What `setAlias` was called with, in order.
        public var aliases: [(alias: String, adapter: String)] = []
        /// Calls nobody scripted, described.
        public var unscripted: [String] = []
    }

    let state = Mutex(State())

    /// A mock with nothing scripted.
    public init() {}

    // MARK: Scripting

    /// Scripts `adapters()`.
    public func scriptAdapters(_ script: Script<[AdapterCapabilities]>) { state.withLock { $0.adapters = script } }
    /// Scripts `powerOn(adapter:)`.
    public func scriptPowerOn(_ script: Script<Void>) { state.withLock { $0.powerOn = script } }
    /// Scripts `register(_:on:)` of an advertisement.
    public func scriptStart(_ script: Script<RegistrationID>) { state.withLock { $0.start = script } }
    /// Scripts `unregister(_:)` of an advertisement.
    public func scriptStop(_ script: Script<Void>) { state.withLock { $0.stop = script } }
    /// Scripts `updateAdvertisement(_:to:)`.
    public func scriptUpdate(_ script: Script<Void>) { state.withLock { $0.update = script } }
    /// Scripts `refreshAdvertisement(_:)`.
    public func scriptRefresh(_ script: Script<Void>) { state.withLock { $0.refresh = script } }
    /// Scripts `reregisterIfDropped(_:)`: true for an advertisement BlueZ had dropped.
    public func scriptReregister(_ script: Script<Bool>) { state.withLock { $0.reregister = script } }

    /// Scripts `register(_:on:)` of an application.
    public func scriptRegisterApplication(_ script: Script<RegistrationID>) { state.withLock { $0.registerApplication = script } }
    /// Scripts `unregister(_:)` of an application.
    public func scriptUnregisterApplication(_ script: Script<Void>) { state.withLock { $0.unregisterApplication = script } }
    /// Scripts `updateValue(_:of:in:)`.
    public func scriptUpdateValue(_ script: Script<Void>) { state.withLock { $0.updateValue = script } }

    /// Scripts `audit()`.
    public func scriptAudit(_ script: Script<[RegistrationAudit]>) { state.withLock { $0.audit = script } }

    /// Scripts `register(_:on:)` of the agent.
    public func scriptRegisterAgent(_ script: Script<RegistrationID>) { state.withLock { $0.registerAgent = script } }
    /// Scripts `unregister(_:)` of the agent.
    public func scriptUnregisterAgent(_ script: Script<Void>) { state.withLock { $0.unregisterAgent = script } }
    /// Scripts `setPairable(_:adapter:)`.
    public func scriptSetPairable(_ script: Script<Void>) { state.withLock { $0.setPairable = script } }
    /// Scripts `bonds(adapter:)`.
    public func scriptBonds(_ script: Script<[Bond]>) { state.withLock { $0.bonds = script } }
    /// Scripts `removeBond(_:adapter:)`.
    public func scriptRemoveBond(_ script: Script<Void>) { state.withLock { $0.removeBond = script } }
    /// Scripts `disconnect(_:adapter:)`.
    public func scriptDisconnect(_ script: Script<Void>) { state.withLock { $0.disconnect = script } }
    /// Scripts `setAlias(_:adapter:)`.
    public func scriptSetAlias(_ script: Script<Void>) { state.withLock { $0.setAlias = script } }
    /// Sets what `unanswered()` says: a stack silent since `call` was sent, or (nil) one that answers.
    public func scriptUnanswered(_ call: UnansweredCall?) { state.withLock { $0.unanswered = call } }

    /// Asks the decider of the agent registered last, as the stack does when a central pairs;
    /// nil when no agent was registered.
    public func agentRequest(_ request: PairingRequest) async -> Bool? {
        guard let decider = calls.registeredAgents.last?.decider else { return nil }
        return await decider.decide(request)
    }

    /// Asks the read handler that `characteristic` was registered with last
    /// (`GATTCharacteristic.onRead`), as the stack does when a central reads it; nil when the
    /// application registered last has no such characteristic, or it has no handler.
    public func centralReads(_ characteristic: GATTCharacteristicID, central: String = "") async throws(GATTReadError) -> [UInt8]? {
        guard let handler = calls.registeredApplications.last?.application[characteristic]?.onRead else { return nil }
        return try await handler.answerer.answer(characteristic, central: central)
    }

    /// Makes `events()` throw `error` (a bus that refuses the subscription).
    public func failEvents(with error: PeripheralError) { state.withLock { $0.eventsFailure = error } }

    /// Delivers an event to every `events()` stream.
    public func emit(_ event: PeripheralEvent) {
        for listener in state.withLock({ $0.listeners }) { listener.yield(event) }
    }

    // MARK: Observing

    /// Everything the mock was asked so far.
    public var calls: Calls { state.withLock { $0.calls } }
    /// How many times `adapters()` was called.
    public var adaptersCallCount: Int { calls.adapters }
    /// How many times `powerOn(adapter:)` was called.
    public var powerOnCallCount: Int { calls.poweredOn.count }
    /// How many advertisements `register(_:on:)` was called with.
    public var startAdvertisingCallCount: Int { calls.started.count }
    /// How many advertisements `unregister(_:)` was called with.
    public var stopAdvertisingCallCount: Int { calls.stopped.count }
    /// How many times `updateAdvertisement(_:to:)` was called.
    public var updateAdvertisementCallCount: Int { calls.updated.count }
    /// How many times `reregisterIfDropped(_:)` was called.
    public var reregisterCallCount: Int { calls.reregistered.count }

    enum Answer<Value: Sendable> {
        case result(Result<Value, PeripheralError>)
        case hang
        case never
        case unscripted
    }

    func answer<Value: Sendable>(
        _ call: String, _ script: WritableKeyPath<State, Script<Value>?>, record: (inout Calls) -> Void
    ) async throws -> Value {
        let answer: Answer<Value> = state.withLock { state in
            record(&state.calls)
            switch state[keyPath: script] {
            case .always(let result)?:
                return .result(result)
            case .hangs?:
                return .hang
            case .neverAnswers?:
                return .never
            case .sequence(var results)? where !results.isEmpty:
                let next = results.removeFirst()
                state[keyPath: script] = .sequence(results)
                return .result(next)
            default:
                state.calls.unscripted.append(call)
                return .unscripted
            }
        }
        switch answer {
        case .result(let result):
            return try result.get()
        case .hang:
            // An AsyncStream's iterator returns nil once its task is cancelled.
            let (never, continuation) = AsyncStream<Never>.makeStream()
            for await _ in never {}
            withExtendedLifetime(continuation) {}
            throw CancellationError()
        case .never:
            await withUnsafeContinuation { continuation in state.withLock { $0.neverAnswered.append(continuation) } }
            throw CancellationError()
        case .unscripted:
            #if canImport(Testing)
            Issue.record("MockPeripheralManager: unscripted call \(call)")
            #endif
            throw MockError.unscripted(call)
        }
    }
}

/// The mock's own failure.
public enum MockError: Error, Hashable, Sendable {
    /// A call the test did not script, described.
    case unscripted(String)
}
