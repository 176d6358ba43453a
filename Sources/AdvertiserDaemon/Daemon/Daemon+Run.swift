import AdvertiserControl
import AdvertiserConfig
import BluetoothModule
import DBus
import Logging
import Peripheral

/// Why the daemon cannot go on; bleadvd exits non-zero with it, and systemd restarts it.
package struct DaemonFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// One line saying what happened and what to check.
    package var description: String

    /// A failure.
    package init(_ description: String) {
        self.description = description
    }
}

extension Daemon {
    /// What the loop reacts to, one at a time.
    enum Event: Sendable {
        /// The module's states changed (after a control call, an event, a retry).
        case states([RegistrationKey: BluetoothModule<C>.Status])
        /// The start-up registrations finished (`true`), or ``readyWait`` passed first.
        case started(settled: Bool)
        /// The process asked for something.
        case request(Request)
        /// The bus connection is gone.
        case busLost
    }

    /// Runs the daemon: takes the bus name, serves the control API, watches BlueZ, puts the
    /// enabled advertisements on air and says READY=1 once they are (or after ``readyWait``,
    /// whatever BlueZ does); then keeps them there until ``Request/stop`` (returns within
    /// ``stopWait``, whatever BlueZ does) or until the bus is lost.
    ///
    /// Everything it starts is a child of one task group, cancelled and awaited before it
    /// returns: a feeder per source (BlueZ's events, handed to the components by a ``Router``,
    /// with each component's queue and `run()`; the module's states; the process's requests;
    /// the bus's loss; the start-up registrations; the watchdog) and reloads asked for by signal.
    /// - Parameter watchdog: systemd's `WatchdogSec=` (`$WATCHDOG_USEC`), if set: WATCHDOG=1 is
    ///   sent every half of it, each after a round trip through this actor and the bus.
    /// - Throws: ``DaemonFailure`` when the name is taken or refused, BlueZ cannot be watched,
    ///   or the bus connection is lost.
    package func run(requests: AsyncStream<Request>, watchdog: Duration? = nil) async throws(DaemonFailure) {
        // Every child, and what it calls, prefers the connection's event loop: no thread of
        // Swift's pool is ever started for the daemon's work.
        try await withTaskExecutorPreference(bus.eventLoop) { () async throws(DaemonFailure) in
            try await runChildren(requests: requests, watchdog: watchdog)
        }
    }

    private func runChildren(requests: AsyncStream<Request>, watchdog: Duration?) async throws(DaemonFailure) {
        let bluez = try await start()
        let changes = await module.changes()
        let failure = await withDiscardingTaskGroup(returning: DaemonFailure?.self) { group in
            // Each component takes its share at once or through a queue of its own, so that none
            // holds up another: the module's turn with BlueZ, which a call bluetoothd is slow to
            // answer can hold for seconds, never keeps a central's write from the value in
            // force, nor a bond from Pairing.
            var router = Router()
            for component in components { router.add(component, in: &group, logger: logger) }
            group.addTask { [router] in
                for await event in bluez { await router.route(event) }
                router.finish()
            }
            group.addTask { [post] in for await states in changes { post.yield(.states(states)) } }
            group.addTask { [post] in for await request in requests { post.yield(.request(request)) } }
            group.addTask { [post, bus] in
                await bus.lost()
                if !Task.isCancelled { post.yield(.busLost) }
            }
            // READY=1 once the enabled advertisements are registered or refused, or after
            // readyWait, whichever comes first; the registrations go on past the wait.
            let (registered, finishRegistering) = AsyncStream<Never>.makeStream()
            group.addTask {
                await self.registerEnabled()
                finishRegistering.finish()
            }
            group.addTask { [post, clock] in
                let settled = await Deadline.within(Self.readyWait, on: clock, executor: self.bus.eventLoop) { () async -> Void in for await _ in registered {} } != nil
                post.yield(.started(settled: settled))
            }
            if let watchdog { group.addTask { await self.keepWatchdog(every: watchdog / 2) } }
            defer { group.cancelAll() }
            for await event in events {
                switch event {
                case .states(let states):
                    await publish(states)
                case .started(let settled):
                    await announceReady(settled: settled)
                case .request(.reload):
                    logger.notice("reloading \(configPath)")
                    group.addTask { try? await self.reload() }
                case .request(.stop):
                    logger.notice("stopping: unregistering everything")
                    await shutdown()
                    return nil
                case .busLost:
                    return DaemonFailure("lost the system bus; exiting so that systemd restarts bleadvd")
                }
            }
            return nil
        }
        if let failure { throw failure }
    }

    /// Says STOPPING=1 and takes everything off air (unregisters from BlueZ), giving up after
    /// ``stopWait`` even if BlueZ never answers.
    func shutdown() async {
        lifecycle = .stopping
        notifier.notify("STOPPING=1")
        let names = await values.names
        let done = await Deadline.within(Self.stopWait, on: clock, executor: bus.eventLoop) { [module] () async -> Void in
            // The components first: an open pairing window is closed, and its opener told now,
            // not when its time runs out; what they put back (the agent, the alias) last.
            for component in self.components { await component.stop() }
            for name in names { try? await module.off(name) }
            await module.serve(nil)
            for component in self.components { await component.putBack() }
        } != nil
        guard !done else { return logger.notice("stopped: everything unregistered") }
        let turn = await module.turn.map { " (the module's \($0.operation) has had the turn with BlueZ for \($0.held))" } ?? ""
        logger.notice("stopped: BlueZ did not answer within \(Self.stopWait)\(turn)")
    }

    /// One heartbeat: a round trip through every actor a user's call goes through — this one,
    /// the module's — and the bus connection (the bus confirms that this connection still owns
    /// the control API's name), within `limit`. A wedge in any of them means no WATCHDOG=1, so
    /// systemd restarts bleadvd.
    package nonisolated func heartbeat(within limit: Duration) async -> Bool {
        await Deadline.within(limit, on: clock, executor: bus.eventLoop) { [module, bus] in
            _ = await module.status()
            return await bus.ownsName()
        } ?? false
    }

    // MARK: Start-up

    /// Takes the name, serves the control API, subscribes to BlueZ's events, and hands the
    /// module its advertisements.
    private func start() async throws(DaemonFailure) -> AsyncStream<PeripheralEvent> {
        let events: AsyncStream<PeripheralEvent>
        // The control API's parts, each served by its component.
        try await bus.serve(ControlTargets([self] + components.map { $0 as any Sendable }))
        do {
            events = try await manager.events()
        } catch {
            throw DaemonFailure("cannot watch BlueZ on the system bus, so advertisements could not be restored after bluetoothd restarts: \(error)")
        }
        await module.configure(await values.advertisements)
        await values.announce(to: announcements)
        await connect()
        return events
    }

    /// Registers the enabled advertisements, in the order of their names.
    private func registerEnabled() async {
        let enabled = await values.enabledNames
        let (advertisements, services) = (await values.names.count, await values.serviceNames.count)
        logger.notice("bleadvd starting: \(advertisements) advertisement(s) in \(configPath), \(enabled.count) enabled, \(services) GATT service(s)")
        // The services first: a central that connects to the advertisement finds them.
        await module.serve(await stage.application())
        // What must be there before centrals come (the agent), then the advertisements, then
        // what may wait (Improv's look at the Wi-Fi, which NetworkManager may be slow to answer
        // at boot).
        for component in components { await component.start(showing: stage) }
        for name in enabled where await stage.isOffered(name) { try? await module.on(name) }
        for component in components { await component.startLast(showing: stage) }
    }

    private func announceReady(settled: Bool) async {
        guard lifecycle == .starting else { return }
        await publish(await module.status())
        lifecycle = .ready
        let summary = statusLine()
        notifier.notify("READY=1\nSTATUS=" + (settled ? summary : "still trying after \(Self.readyWait): " + summary))
        logger.notice("ready: \(summary)")
    }

    // MARK: Watchdog

    private nonisolated func keepWatchdog(every interval: Duration) async {
        while (try? await clock.sleep(for: interval)) != nil {
            if await heartbeat(within: interval) {
                notifier.notify("WATCHDOG=1")
            } else {
                logger.warning("watchdog: no round trip through the daemon and the bus within \(interval); not telling systemd we are alive")
            }
        }
    }
}
