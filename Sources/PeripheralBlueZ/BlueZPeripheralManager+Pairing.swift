import DBus
import Logging
public import Peripheral

/// Pairing: the agent bluetoothd asks when a central pairs, the adapter's `Pairable`, and the
/// bonds (`Device1` objects under the adapter, with `Bonded`).
extension BlueZPeripheralManager: BondManaging {
    /// Exports the agent at `/org/bleadvd/agent` for the current bluetoothd only, registers it
    /// with the capability of `method` and makes it the default agent (the one asked for
    /// centrals that pair with this box). An agent of this manager already registered with
    /// that bluetoothd for the same method is kept.
    func registerAgent(_ method: PairingMethod, decider: any PairingDecider) async throws -> RegistrationID {
        let generation = try await currentBluetoothd()
        let path = BlueZ.agentPath
        if let export = exports[path], export.generation == generation, export.agent == method {
            return RegistrationID(path.rawValue, generation: generation)
        }
        if exports[path] != nil { try? await unregister(RegistrationID(path.rawValue, generation: exports[path]!.generation)) }
        await connection.unexport(path)
        do {
            try await connection.export([agentInterface(decider, at: path)], at: path, caller: generation.name)
        } catch let error as DBusError {
            throw PeripheralError(.invalid, "cannot export the pairing agent: \(error.message)")
        }
        do {
            do {
                _ = try await callBlueZ(
                    on: generation, path: BlueZ.agentManagerPath, .registerAgent,
                    [.objectPath(path), .string(BlueZ.capability(method))], expecting: .empty, about: .registration(.agent))
            } catch let error as PeripheralError where error.code == .alreadyRegistered {
                // Registered by this connection already (a registration whose answer was lost).
            }
            _ = try await callBlueZ(
                on: generation, path: BlueZ.agentManagerPath, .requestDefaultAgent,
                [.objectPath(path)], expecting: .empty, about: .registration(.agent))
        } catch {
            await connection.unexport(path)
            throw error
        }
        guard bluetoothd == generation else {
            await connection.unexport(path)
            throw PeripheralError(.bluezUnavailable, "bluetoothd \(generation) left the bus while registering the pairing agent")
        }
        exports[path] = Export(adapter: "", generation: generation, objects: .agent(method))
        logger.debug("pairing agent \(path) registered with bluetoothd \(generation) as \(BlueZ.capability(method))")
        return RegistrationID(path.rawValue, generation: generation)
    }

    /// Sets the adapter's `Pairable`. Closing it first makes this manager's agent, when one is
    /// registered, the default again: any local user may take the default with BlueZ's
    /// `RequestDefaultAgent` (its policy lets every user), and BlueZ says so to no one. First,
    /// because a new default agent makes the adapters pairable (agent.c's `add_default_agent`,
    /// with `AlwaysPairable` false); the one at the head already changes nothing.
    public func setPairable(_ pairable: Bool, adapter: String) async throws {
        let generation = try await currentBluetoothd()
        if !pairable, exports[BlueZ.agentPath]?.generation == generation {
            do {
                _ = try await callBlueZ(
                    on: generation, path: BlueZ.agentManagerPath, .requestDefaultAgent,
                    [.objectPath(BlueZ.agentPath)], expecting: .empty, about: .registration(.agent))
            } catch {
                logger.warning("the pairing agent could not be made the default again: \(error)")
            }
        }
        _ = try await callBlueZ(
            on: generation, path: try BlueZ.adapterPath(adapter), .setProperty, [.string(BlueZ.adapterInterface), .string("Pairable"), .variant(.boolean(pairable))], about: .registration(.agent))
        logger.info("\(adapter) \(pairable ? "takes new bonds" : "takes no new bonds")")
    }

    /// The devices under the adapter that are bonded (`Bonded`, or `Paired` where BlueZ before
    /// 5.65 has no `Bonded`), from `GetManagedObjects`.
    public func bonds(adapter: String) async throws -> [Bond] {
        let reply = try await callBlueZ(
            on: try await currentBluetoothd(), path: BlueZ.root, .getManagedObjects, expecting: BlueZ.managedObjectsSignature, about: .registration(.agent))
        return (reply[0].dictionaryEntries ?? []).compactMap { entry -> Bond? in
            guard let path = entry.key.objectPath, let device = BlueZ.device(at: path), device.adapter == adapter,
                  let properties = entry.value.dictionaryEntries?.first(where: { $0.key.string == BlueZ.deviceInterface })?
                      .value.variantDictionary,
                  (properties["Bonded"] ?? properties["Paired"])?.boolean == true else { return nil }
            return Bond(central: device.address, name: properties["Name"]?.string)
        }.sorted()
    }

    /// Removes the device (and its keys) with `Adapter1.RemoveDevice`.
    public func removeBond(_ central: String, adapter: String) async throws {
        let device = try BlueZ.devicePath(central, adapter: adapter)
        do {
            _ = try await callBlueZ(
                on: try await currentBluetoothd(), path: try BlueZ.adapterPath(adapter), .removeDevice, [.objectPath(device)], expecting: .empty, about: .registration(.agent))
        } catch let error as PeripheralError where error.code == .notRegistered || error.code == .rejected {
            throw PeripheralError(.unknownName, "\(adapter) has no bond with \(central.uppercased())")
        }
    }

    /// The agent's interface: each request goes to `decider`; what it refuses is answered with
    /// `org.bluez.Error.Rejected`. Requests for a code typed here (PIN, passkey) and for
    /// authorizing a profile are refused: bleadvd has no keyboard, and serves LE only.
    private func agentInterface(_ decider: any PairingDecider, at path: DBusObjectPath) -> DBusInterface {
        let device = DBusArgument("device", .objectPath)
        let passkey = DBusArgument("passkey", .uint32)
        let refuse = { (name: String, inputs: [DBusArgument], outputs: [DBusArgument]) in
            DBusMethod(name, inputs: inputs, outputs: outputs) { _ in throw DBusError(BlueZ.rejected, "bleadvd cannot take a code") }
        }
        let methods = [
            DBusMethod("Release") { [weak self] _ in
                await self?.agentReleased(path)
                return []
            },
            refuse("RequestPinCode", [device], [DBusArgument("pincode", .string)]),
            refuse("DisplayPinCode", [device, DBusArgument("pincode", .string)], []),
            refuse("RequestPasskey", [device], [passkey]),
            DBusMethod("DisplayPasskey", inputs: [device, passkey, DBusArgument("entered", .uint16)]) { call in
                // Shown, not asked: bluetoothd expects no answer, and pairs if the central types it.
                _ = await decider.decide(Self.request(call, .passkey(call.arguments[1].uint32 ?? 0)))
                return []
            },
            DBusMethod("RequestConfirmation", inputs: [device, passkey]) { call in
                try await Self.ask(decider, Self.request(call, .confirm(call.arguments[1].uint32 ?? 0)))
            },
            DBusMethod("RequestAuthorization", inputs: [device]) { call in try await Self.ask(decider, Self.request(call, .authorize)) },
            refuse("AuthorizeService", [device, DBusArgument("uuid", .string)], []),
            DBusMethod("Cancel") { _ in
                await decider.cancel()
                return []
            },
        ]
        return DBusInterface(name: BlueZ.agentInterface, methods: methods)
    }

    /// The request a call of bluetoothd's carries: the central from the device path (first
    /// argument), empty when it is not one.
    private static func request(_ call: DBusMethodCall, _ kind: PairingRequest.Kind) -> PairingRequest {
        PairingRequest(central: call.arguments[0].objectPath.flatMap(BlueZ.device(at:))?.address ?? "", kind)
    }

    /// Asks `decider`; a refusal is BlueZ's `Rejected`.
    private static func ask(_ decider: any PairingDecider, _ request: PairingRequest) async throws -> [DBusValue] {
        guard await decider.decide(request) else { throw DBusError(BlueZ.rejected, "not now") }
        return []
    }

    /// bluetoothd released the agent (it is stopping, or another took its place): registered
    /// again by the module.
    private func agentReleased(_ path: DBusObjectPath) async {
        guard let export = exports[path], export.agent != nil else { return }
        exports[path] = nil
        await connection.unexport(path)
        publish(.released(RegistrationID(path.rawValue, generation: export.generation)))
    }
}
