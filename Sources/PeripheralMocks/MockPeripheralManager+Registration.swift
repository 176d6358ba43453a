public import Peripheral
import Synchronization

/// The mock's ``RegistrationManaging``: each call recorded, answered as scripted.
extension MockPeripheralManager: RegistrationManaging {
    /// Records the call by kind (``Calls/started``, ``Calls/registeredApplications``,
    /// ``Calls/registeredAgents``); answers as that kind's script says (``scriptStart(_:)``,
    /// ``scriptRegisterApplication(_:)``, ``scriptRegisterAgent(_:)``).
    public func register(_ subject: RegistrationSubject, on adapter: String) async throws -> RegistrationID {
        let id: RegistrationID
        switch subject {
        case .advertisement(let advertisement):
            id = try await answer("register(.advertisement, on: \(adapter))", \.start) { $0.started.append((advertisement, adapter)) }
        case .application(let application):
            id = try await answer("register(.application, on: \(adapter))", \.registerApplication) {
                $0.registeredApplications.append((application, adapter))
            }
        case .agent(let method, let decider):
            id = try await answer("register(.agent(\(method)), on: \(adapter))", \.registerAgent) {
                $0.registeredAgents.append((method, decider))
            }
        }
        state.withLock { $0.kinds[id] = subject.kind }
        return id
    }

    /// Records the call by the kind of registration that handed out `id` (an identity it never
    /// handed out counts as an advertisement's): ``Calls/stopped``,
    /// ``Calls/unregisteredApplications`` or ``Calls/unregisteredAgents``; answers as that
    /// kind's script says (``scriptStop(_:)``, ``scriptUnregisterApplication(_:)``,
    /// ``scriptUnregisterAgent(_:)``).
    public func unregister(_ id: RegistrationID) async throws {
        switch state.withLock({ $0.kinds[id] }) ?? .advertisement {
        case .advertisement: try await answer("unregister(\(id))", \.stop) { $0.stopped.append(id) }
        case .application: try await answer("unregister(\(id))", \.unregisterApplication) { $0.unregisteredApplications.append(id) }
        case .agent: try await answer("unregister(\(id))", \.unregisterAgent) { $0.unregisteredAgents.append(id) }
        }
    }

    /// Records the call; answers as ``scriptUpdate(_:)`` says.
    public func updateAdvertisement(_ id: RegistrationID, to advertisement: Advertisement) async throws {
        try await answer("updateAdvertisement(\(id))", \.update) { $0.updated.append((id, advertisement)) }
    }

    /// Records the call; answers as ``scriptRefresh(_:)`` says.
    public func refreshAdvertisement(_ id: RegistrationID) async throws {
        try await answer("refreshAdvertisement(\(id))", \.refresh) { $0.refreshed.append(id) }
    }

    /// Records the call; answers as ``scriptReregister(_:)`` says.
    public func reregisterIfDropped(_ id: RegistrationID) async throws -> Bool {
        try await answer("reregisterIfDropped(\(id))", \.reregister) { $0.reregistered.append(id) }
    }

    /// Records the call; answers as ``scriptAudit(_:)`` says.
    public func audit() async throws -> [RegistrationAudit] {
        try await answer("audit()", \.audit) { $0.audits += 1 }
    }
}
