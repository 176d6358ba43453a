internal import CDBus

/// One signal subscription: its rule and where its signals go. Lives on the connection's queue.
final class Subscription {
    let rule: DBusMatchRule
    let deliver: (DBusMessage) -> Void
    let finish: () -> Void

    init(rule: DBusMatchRule, deliver: @escaping (DBusMessage) -> Void, finish: @escaping () -> Void) {
        self.rule = rule
        self.deliver = deliver
        self.finish = finish
    }
}

/// The current owner of a well-known name that some subscription's `sender` names.
struct TrackedOwner {
    var owner: String?
    var users: Int
    var watchID: UInt64
}

extension DBusConnection {
    /// The bus daemon's own name.
    public static let busName = "org.freedesktop.DBus"
    static let busPath: DBusObjectPath = "/org/freedesktop/DBus"

    /// Subscribes to the signals a rule matches. The rule is active on the bus when this
    /// returns; it is removed when the stream's consumer stops. The stream finishes when the
    /// connection closes.
    /// - Throws: ``DBusError`` when the rule is invalid or the bus refuses it.
    public func signals(matching rule: DBusMatchRule) async throws -> AsyncStream<DBusMessage> {
        try await signals(matching: [rule])
    }

    /// Subscribes to the signals any of several rules matches, in one stream, in the order the
    /// bus delivered them (separate streams would lose the order between them). A signal that
    /// matches two rules arrives once. The order holds among the signals only: a reply that came
    /// after a signal may resume its caller before the stream's consumer sees that signal.
    /// - Throws: ``DBusError`` when a rule is invalid or the bus refuses one; then none is active.
    public func signals(matching rules: [DBusMatchRule]) async throws -> AsyncStream<DBusMessage> {
        let (stream, continuation) = AsyncStream<DBusMessage>.makeStream()
        var ids: [UInt64] = []
        var lastSerial: (sender: String?, serial: UInt32)?
        let deliver: (DBusMessage) -> Void = { message in
            // Every subscription sees each message in the same dispatch; deliver it only once.
            if let last = lastSerial, last.sender == message.sender, last.serial == message.serial { return }
            lastSerial = (message.sender, message.serial)
            continuation.yield(message)
        }
        do {
            for rule in rules {
                ids.append(try await subscribe(rule, deliver: deliver, finish: { continuation.finish() }))
            }
        } catch {
            for id in ids { await unsubscribe(id) }
            throw error
        }
        continuation.onTermination = { [weak self, ids, eventLoop] _ in
            Task(executorPreference: eventLoop) { for id in ids { await self?.unsubscribe(id) } }
        }
        return stream
    }

    /// The unique name that owns `name` as this connection last saw it from `NameOwnerChanged`,
    /// without asking the bus: nil when it has no owner or no subscription's `sender` names it.
    /// Messages are handled in order, so it is current for the message being handled.
    public func followedOwner(of name: String) -> String? {
        trackedOwners[name]?.owner
    }

    /// The unique name that owns `name` now, or nil when it has no owner.
    public func nameOwner(_ name: String) async throws -> String? {
        do {
            return try await callBus("GetNameOwner", [.string(name)], expecting: "s")[0].string
        } catch let error as DBusError where error.name == .nameHasNoOwner {
            return nil
        }
    }

    /// Returns once `name` has no owner on the bus, at once when it has none now: a client
    /// that asked for something lasting (a subscription, a window) is gone. Follows the name's
    /// `NameOwnerChanged` alone (no wake-up for any other name); returns early when the task
    /// is cancelled or the connection closes.
    /// - Throws: ``DBusError`` when the bus cannot be asked.
    public func departure(of name: String) async throws {
        let changes = try await signals(matching: Self.ownerChangedRule(name))
        // Asked after the rule is in place: a departure in between is seen one way or the other.
        guard try await nameOwner(name) != nil else { return }
        for await change in changes where change.body.count == 3 && change.body[2].string == "" { return }
    }

    /// The user id of the process that owns `name` (`GetConnectionUnixUser`).
    /// - Throws: ``DBusError`` when the name has no owner or the bus cannot tell.
    public func unixUser(of name: String) async throws -> UInt32 {
        guard let uid = try await callBus("GetConnectionUnixUser", [.string(name)], expecting: "u")[0].uint32 else {
            throw DBusError(.invalidArgs, "the bus's GetConnectionUnixUser reply holds no user id")
        }
        return uid
    }

    /// Takes a well-known name. Refuses to queue behind another owner: if someone owns it
    /// already, this throws instead.
    /// - Throws: ``DBusError`` named ``DBusError/Name/nameTaken`` when another connection owns
    ///   the name, or the bus's error (e.g. `AccessDenied` when policy forbids owning it).
    public func requestName(_ name: String) async throws {
        try DBusName.validateBusName(name)
        guard !name.hasPrefix(":") else { throw DBusError.invalidArgs("\(name) is a unique name; it cannot be requested") }
        let reply = try await callBus(
            "RequestName", [.string(name), .uint32(UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE))], expecting: "u")
        let code = reply[0].uint32
        guard code == UInt32(DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) || code == UInt32(DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER) else {
            let owner = (try? await nameOwner(name)).flatMap { $0 } ?? "another connection"
            throw DBusError(.nameTaken, "the name \(name) is already owned by \(owner)")
        }
    }

    func callBus(_ member: String, _ arguments: [DBusValue], expecting: DBusSignature) async throws -> [DBusValue] {
        try await call(
            destination: Self.busName, path: Self.busPath, interface: Self.busName, member: member, arguments,
            expecting: expecting)
    }

    private static func ownerChangedRule(_ name: String) -> DBusMatchRule {
        DBusMatchRule(sender: busName, path: busPath, interface: busName, member: "NameOwnerChanged", arg0: name)
    }

    private func subscribe(
        _ rule: DBusMatchRule, deliver: @escaping (DBusMessage) -> Void, finish: @escaping () -> Void
    ) async throws -> UInt64 {
        try rule.validate()
        guard isConnected else { throw DBusError(.disconnected, "the connection is closed") }
        if rule.needsOwnerTracking, let sender = rule.sender {
            try await trackOwner(of: sender)
        }
        let id = makeID()
        subscriptions[id] = Subscription(rule: rule, deliver: deliver, finish: finish)
        do {
            _ = try await callBus("AddMatch", [.string(rule.text)], expecting: .empty)
        } catch {
            subscriptions[id] = nil
            untrackOwner(rule)
            throw error
        }
        return id
    }

    func unsubscribe(_ id: UInt64) async {
        guard let subscription = subscriptions.removeValue(forKey: id) else { return }
        untrackOwner(subscription.rule)
        guard isConnected else { return }
        _ = try? await callBus("RemoveMatch", [.string(subscription.rule.text)], expecting: .empty)
    }

    /// Starts following the owner of `name`, which a rule's `sender` names: libdbus matches
    /// signals by unique sender, so the rule needs the owner's unique name.
    /// - Throws: when the owner cannot be asked (a bus that refuses `GetNameOwner`): a
    ///   subscription that could never match must fail, not wait forever in silence.
    private func trackOwner(of name: String) async throws {
        if trackedOwners[name] != nil {
            trackedOwners[name]!.users += 1
            return
        }
        // handleSignal keeps the owner current from the NameOwnerChanged signals this adds.
        let id = try await subscribe(Self.ownerChangedRule(name), deliver: { _ in }, finish: {})
        if trackedOwners[name] != nil {
            // Another subscription started tracking while this one waited.
            trackedOwners[name]!.users += 1
            await unsubscribe(id)
            return
        }
        trackedOwners[name] = TrackedOwner(owner: nil, users: 1, watchID: id)
        do {
            let owner = try await nameOwner(name)
            trackedOwners[name]?.owner = owner
        } catch {
            untrackOwner(name)
            throw error
        }
    }

    private func untrackOwner(_ rule: DBusMatchRule) {
        guard rule.needsOwnerTracking, let name = rule.sender else { return }
        untrackOwner(name)
    }

    private func untrackOwner(_ name: String) {
        guard var tracked = trackedOwners[name] else { return }
        tracked.users -= 1
        if tracked.users > 0 {
            trackedOwners[name] = tracked
        } else {
            trackedOwners[name] = nil
            let watchID = tracked.watchID
            Task(executorPreference: eventLoop) { await self.unsubscribe(watchID) }
        }
    }

    // MARK: Incoming

    /// Routes one incoming message. Runs on the connection's event loop, inside libdbus's dispatch.
    /// Returns whether the message was handled.
    func receive(_ raw: RawMessage) -> Bool {
        let isCall = dbus_message_get_type(raw.pointer) == Int32(DBUS_MESSAGE_TYPE_METHOD_CALL)
        let message: DBusMessage
        do {
            if isCall {
                // What the call asks for is checked on its header and signature first: a call
                // that would be refused anyway costs nothing to unpack, however large.
                let header = DBusMessage(header: raw.pointer)
                switch route(header, signature: DBusMessage.rawSignature(raw.pointer)) {
                case .failure(let refusal):
                    reply(to: header, with: .failure(refusal))
                case .success(let method):
                    handleMethodCall(try DBusMessage(raw: raw.pointer, maximumValues: DBusMessage.maximumCallValues), method: method)
                }
                return true
            } else {
                // A reply or an error here is none a pending call waits for (those reach it
                // directly); a signal is unpacked only when its header says something takes it.
                // Anyone on the bus may address signals to this connection's unique name,
                // which no match rule filters: one nothing takes costs nothing to unpack,
                // however large.
                let header = DBusMessage(header: raw.pointer)
                guard header.kind == .signal, takes(header) else { return false }
                unpackedSignals += 1
                message = try DBusMessage(raw: raw.pointer)
            }
        } catch {
            guard isCall else { return false }
            reply(to: DBusMessage(header: raw.pointer), with: .failure(error))
            return true
        }
        switch message.kind {
        case .signal:
            handleSignal(message)
            return false
        default:
            return false
        }
    }

    /// Whether a signal with `header` is taken by something: the connection's own end, the
    /// bus's word on a name whose owner is followed, or a subscription.
    private func takes(_ header: DBusMessage) -> Bool {
        if header.interface == "org.freedesktop.DBus.Local" && header.member == "Disconnected" { return true }
        if header.sender == Self.busName, header.member == "NameOwnerChanged", !trackedOwners.isEmpty { return true }
        return subscriptions.values.contains { subscription in
            subscription.rule.matchesHeader(header, senderOwner: subscription.rule.sender.flatMap { trackedOwners[$0]?.owner })
        }
    }

    private func handleSignal(_ message: DBusMessage) {
        if message.interface == "org.freedesktop.DBus.Local" && message.member == "Disconnected" {
            handleDisconnect()
            return
        }
        if message.sender == Self.busName, message.member == "NameOwnerChanged", message.body.count == 3,
           let name = message.body[0].string, trackedOwners[name] != nil {
            let owner = message.body[2].string ?? ""
            trackedOwners[name]!.owner = owner.isEmpty ? nil : owner
        }
        for subscription in subscriptions.values {
            let owner = subscription.rule.sender.flatMap { trackedOwners[$0]?.owner }
            if subscription.rule.matches(message, senderOwner: owner) {
                subscription.deliver(message)
            }
        }
    }

    private func handleDisconnect() {
        guard isConnected else { return }
        isConnected = false
        for pending in outstanding.values {
            pending.abandon(with: DBusError(.disconnected, "the connection closed before the reply arrived"))
        }
        for subscription in subscriptions.values { subscription.finish() }
        subscriptions.removeAll()
        trackedOwners.removeAll()
        publish(.disconnected)
        for listener in eventListeners.values { listener.finish() }
        eventListeners.removeAll()
    }
}
