/// Polls `condition` every `interval` until it holds; throws a `TestFailure` saying what was
/// awaited if it does not within `limit`. It runs on the caller's actor, so `condition` may
/// read the caller's state.
///
/// For what runs in its own time — a real dbus-daemon, a child process, a task the test does
/// not drive. A test on an injected clock advances the clock instead of waiting on this.
///
/// `limit` guards against a hang; it is no measure of speed (benchmarks measure). The default
/// is a minute: beside the test bed's image build on a 2-core machine (`make test`), a
/// condition that holds within a second alone took over 10 s, the whole suite's tasks and the
/// build's processes sharing the cores (docs/TESTING.md, "Deadlines in tests").
///
/// ```swift
/// try await eventually("the helper owns its bus name") {
///     try await connection.nameOwner(JoinHelper.busName) != nil
/// }
/// ```
public func eventually(
    _ what: String,
    within limit: Duration = .seconds(60),
    every interval: Duration = .milliseconds(10),
    isolation: isolated (any Actor)? = #isolation,
    _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: limit)
    while try await !condition() {
        guard clock.now < deadline else { throw TestFailure("timed out after \(limit) waiting until \(what)") }
        do {
            try await Task.sleep(for: interval)
        } catch {
            // The test's time limit (or its end) cancelled the wait: say what was awaited.
            throw TestFailure("cancelled after \(limit - clock.now.duration(to: deadline)) waiting until \(what)")
        }
    }
}
