internal import CDBus
import Dispatch

/// Every libdbus timeout of a connection on one DispatchSource timer, armed for the earliest
/// deadline. A call's timeout comes and goes with each call; giving each its own timer would
/// cost a trip to libdispatch's manager thread per call. The timer is moved only when a
/// deadline comes earlier than the armed one, and is left armed when a timeout goes: it then
/// fires once for nothing and stays idle.
final class TimeoutScheduler {
    private unowned let loop: DBusEventLoop
    private let timer: any DispatchSourceTimer
    private var deadlines: [OpaquePointer: DispatchTime] = [:]
    private var armed: DispatchTime?
    private var stopped = false

    init(loop: DBusEventLoop) {
        self.loop = loop
        timer = DispatchSource.makeTimerSource(queue: loop.queue)
        timer.setEventHandler { [unowned self] in fire() }
        timer.schedule(deadline: .distantFuture)
        timer.resume()
    }

    func add(_ timeout: OpaquePointer) -> dbus_bool_t {
        update(timeout)
        return 1
    }

    func remove(_ timeout: OpaquePointer) {
        deadlines[timeout] = nil
    }

    /// (Re)starts a timeout's interval when it is enabled; forgets it when it is not.
    func update(_ timeout: OpaquePointer) {
        dispatchPrecondition(condition: .onQueue(loop.queue))
        guard dbus_timeout_get_enabled(timeout) != 0 else {
            deadlines[timeout] = nil
            return
        }
        let deadline = DispatchTime.now() + .milliseconds(Int(dbus_timeout_get_interval(timeout)))
        deadlines[timeout] = deadline
        arm(deadline)
    }

    func stop() {
        stopped = true
        deadlines = [:]
        timer.cancel()
    }

    private func arm(_ deadline: DispatchTime) {
        guard !stopped, armed.map({ deadline < $0 }) ?? true else { return }
        armed = deadline
        timer.schedule(deadline: deadline)
    }

    private func fire() {
        dispatchPrecondition(condition: .onQueue(loop.queue))
        armed = nil
        let now = DispatchTime.now()
        for (timeout, deadline) in deadlines where deadline <= now {
            // Handling one timeout may remove others; libdbus re-adds or toggles what repeats.
            guard deadlines[timeout] != nil, !loop.isFinished else { continue }
            deadlines[timeout] = now + .milliseconds(Int(dbus_timeout_get_interval(timeout)))
            loop.handle(timeout)
        }
        loop.drain()
        if let next = deadlines.values.min() { arm(next) }
    }
}
