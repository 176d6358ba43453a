import AdvertiserConfig
import BluetoothModule
import Logging
import Peripheral

/// Values as the telemetry component's port: a TLM frame's counters go on air with the values in
/// force (a battery or temperature set since).
extension Values: TelemetryShowing {
    func air(_ name: String) async -> TelemetryAir {
        guard let status = await module.status()[.advertisement(name)], status.desired else { return .off }
        guard case .on = status.phase else { return .coming }
        return .on(status.since.duration(to: clock.now))
    }

    func show(counters: EddystoneTLM.Counters, in name: String) async {
        guard entries[name]?.values.live.telemetry != nil else { return }
        entries[name]!.counters = counters
        // The frame carries the values in force too: a sender running has nothing left to send.
        entries[name]!.values.markSent()
        do {
            try await module.update(name, to: entries[name]!.advertisement)
        } catch {
            logger.warning("\(name): its TLM counters did not reach BlueZ: \(error)")
        }
    }
}
