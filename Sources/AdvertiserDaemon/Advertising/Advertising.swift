import BluetoothModule
import Peripheral

/// Advertising, the daemon's first component, is the module itself: it keeps the
/// advertisements, the GATT application and the agent registered, and owns its retry and
/// audit timers. It takes a central's write at once (the value to register again, kept without
/// the module's turn with BlueZ) and the rest of BlueZ's events in turn, but for what centrals
/// otherwise do and their bonds, which change nothing it keeps.
extension BluetoothModule: DaemonComponent {
    nonisolated func delivery(of event: PeripheralEvent) -> Delivery<PeripheralEvent> {
        switch event {
        case .gatt(let gatt): if case .written = gatt.kind { .now(event) } else { .pass }
        case .paired, .bondEnded: .pass
        default: .inTurn(event)
        }
    }

    func take(_ event: PeripheralEvent) async {
        await handle(event)
    }
}
