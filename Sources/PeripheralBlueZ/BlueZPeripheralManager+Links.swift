import DBus
import Logging
public import Peripheral

/// Secured notifications. bluetoothd sends each change of a characteristic's `Value` to every
/// central whose notifications are on (src/gatt-database.c, `send_notification_to_devices`):
/// bleadvd cannot tell whom it reaches. A central bonded around bleadvd (any local user may let
/// one bond, by Debian's BlueZ policy), whose reads and writes of a secured characteristic are
/// refused, would still get its changes once subscribed. So a secured characteristic's change
/// of `Value` waits while a central bleadvd does not admit, and that may be bonded, is connected
/// to its adapter; the latest value goes out once none is. Where bleadvd admitted centrals to a
/// socket of their own (+Sockets), they get the change through it at once meanwhile (and the
/// latest once more when it goes out).
extension BlueZPeripheralManager {
    /// A central connected to `adapter` that bleadvd does not admit and that may be bonded (the
    /// least address, for the log); nil when there is none.
    func stranger(on adapter: String) -> String? {
        links[adapter]?.filter { $0.value && !admits($0.key) }.keys.min()
    }

    /// Sets a characteristic's `Value` (`always`: announced even when it is the same). The
    /// change of a `secured` characteristic (``GATTCharacteristic/isSecuredNotifying``) is not
    /// announced while a ``stranger(on:)`` is connected: it waits in ``heldChanges``, logged once.
    func store(_ bytes: [UInt8], of id: GATTCharacteristicID, at path: DBusObjectPath, secured: Bool, always: Bool) async throws {
        let adapter = secured ? exports.first(where: { path.isDescendant(of: $0.key) })?.value.adapter : nil
        let stranger = adapter.flatMap(stranger(on:))
        if let adapter, stranger == nil { await sendHeldChanges(on: adapter) }
        try await connection.setProperty(
            "Value", of: BlueZ.characteristicInterface, at: path, to: .bytes(bytes), always: always, announce: stranger == nil)
        // The centrals with a socket are admitted (+Sockets): they need not wait.
        if stranger != nil { try? notifyThroughSockets(bytes, at: path, only: nil) }
        if let adapter, let stranger, heldChanges.updateValue((adapter, id), forKey: path) == nil {
            logger.notice("GATT: \(id)'s change waits: \(Central.named(stranger)) is connected to \(adapter) and may be bonded outside bleadvd's pairing windows, and BlueZ notifies every subscriber alike; it goes out once no such central is connected")
        }
    }

    /// A link came up (`bonded`: BlueZ said the central is paired; nil: it did not say), or a
    /// connected central's `Paired` turned true.
    func linked(_ central: String, on adapter: String, bonded: Bool?) {
        links[adapter, default: [:]][central] = bonded ?? links[adapter]?[central] ?? true
    }

    /// A central's link ended: the changes held for it go out once no stranger is left.
    func unlinked(_ central: String, on adapter: String) async {
        guard links[adapter]?.removeValue(forKey: central) != nil else { return }
        if links[adapter]!.isEmpty { links[adapter] = nil }
        await sendHeldChanges(on: adapter)
    }

    /// Every link of `adapter` ended (nil: of every adapter), its power or bluetoothd gone.
    func linksEnded(on adapter: String?) async {
        if let adapter { links[adapter] = nil } else { links = [:] }
        for (path, held) in heldChanges where adapter == nil || held.adapter == adapter {
            heldChanges[path] = nil
        }
    }

    /// Announces the held changes of `adapter`'s characteristics, when no stranger is connected
    /// to it: subscribers get each one's latest value.
    func sendHeldChanges(on adapter: String) async {
        guard stranger(on: adapter) == nil else { return }
        for (path, held) in heldChanges where held.adapter == adapter {
            heldChanges[path] = nil
            guard let value = await connection.property("Value", of: BlueZ.characteristicInterface, at: path) else { continue }
            try? await connection.setProperty("Value", of: BlueZ.characteristicInterface, at: path, to: value, always: true)
            logger.info("GATT: \(held.id)'s held change went out")
        }
    }
}

extension GATTCharacteristic {
    /// Whether its changes go to subscribers (notify, indicate) and its value only to centrals
    /// bleadvd admits (a security other than none): its changes may have to wait.
    var isSecuredNotifying: Bool {
        security != .none && !flags.isDisjoint(with: [.notify, .indicate])
    }
}

/// The links centrals made: ended on request.
extension BlueZPeripheralManager: LinkManaging {
    /// Ends the link with `central` (`Device1.Disconnect`).
    public func disconnect(_ central: String, adapter: String) async throws {
        do {
            _ = try await callBlueZ(
                on: try await currentBluetoothd(), path: try BlueZ.devicePath(central, adapter: adapter), .disconnectDevice, expecting: .empty,
                about: .adapter)
        } catch let error as PeripheralError where error.code == .notRegistered || error.code == .rejected {
            throw PeripheralError(.unknownName, "\(adapter) knows no central \(central.uppercased())")
        }
    }
}
