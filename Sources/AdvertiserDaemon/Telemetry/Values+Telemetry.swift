import AdvertiserConfig
import BluetoothModule
import Logging
import Peripheral

/// Values as the telemetry component's port: a TLM frame's counters go on air with the values in
/// force (a battery or temperature set since), as the component's share of its packets
/// (``PacketShare``).
extension Values: TelemetryShowing {
    /// Whose share of the packets the counters are.
    static var telemetryOwner: String { "telemetry" }

    func air(_ name: String) async -> TelemetryAir {
        guard let status = await status(of: name), status.desired else { return .off }
        guard case .on = status.phase else { return .coming }
        return .on(status.since.duration(to: clock.now))
    }

    func show(counters: EddystoneTLM.Counters, in name: String) async {
        guard configured(name)?.telemetry != nil else { return }
        do {
            try await show(PacketShare(holds: false) { $0.telemetry?.frame.counters = counters }, of: Self.telemetryOwner, in: name, newPacket: false)
        } catch {
            logger.warning("\(name): its TLM counters did not reach BlueZ: \(error)")
        }
    }
}
