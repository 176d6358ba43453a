package import DBus
package import Peripheral

/// What a call to BlueZ was about, so that its errors name it.
package enum BlueZSubject: Sendable, Equatable {
    /// A registration of this kind (registering it, unregistering it, what it does).
    case registration(RegistrationSubject.Kind)
    /// The adapter's own properties (powering it on).
    case adapter

    var noun: String {
        switch self {
        case .registration(.advertisement): "the advertisement"
        case .registration(.application): "the GATT application"
        case .registration(.agent): "the pairing agent"
        case .adapter: "the adapter's setting"
        }
    }

    var ability: String {
        switch self {
        case .registration(.advertisement): "advertise"
        case .registration(.application): "serve GATT"
        case .registration(.agent): "pair"
        case .adapter: "be powered on"
        }
    }
}

extension PeripheralError {
    /// Translates an error from BlueZ or the bus into a code and a message a person can act on.
    /// This is the one place BlueZ's error names are mapped; an unknown name keeps its name in
    /// the message under the `unknown` code.
    package init(bluez error: DBusError, about subject: BlueZSubject = .registration(.advertisement)) {
        let detail = error.message.isEmpty ? "" : " (BlueZ: \(error.message))"
        switch error.name.rawValue {
        case "org.bluez.Error.NotPermitted" where error.message.contains("Maximum advertisements"):
            self.init(.noFreeInstance, "the adapter has no free advertising slot; turn another advertisement off or wait" + detail)
        case "org.bluez.Error.NotPermitted":
            self.init(.failed, "BlueZ did not permit the request" + detail)
        case "org.bluez.Error.Failed" where error.message.contains("parse advertisement"):
            self.init(.rejected, "BlueZ could not parse \(subject.noun): a property has the wrong type or breaks a rule" + detail)
        case "org.bluez.Error.Failed":
            self.init(.failed, "BlueZ or the kernel refused \(subject.noun); it will be tried again" + detail)
        case "org.bluez.Error.AlreadyExists":
            self.init(.alreadyRegistered, "\(subject.noun) is registered already" + detail)
        case "org.bluez.Error.DoesNotExist":
            self.init(.notRegistered, "BlueZ does not have \(subject.noun) registered" + detail)
        case "org.bluez.Error.InvalidArguments":
            self.init(.rejected, "BlueZ refused the call's arguments" + detail)
        case "org.bluez.Error.Busy" where subject == .adapter:
            // bluetoothd is changing the same setting already (it powers every adapter on as
            // it starts): its PropertiesChanged says when that is done.
            self.init(.notPowered, "the adapter is being powered on or off already; waiting for it" + detail)
        case "org.bluez.Error.Busy":
            self.init(.failed, "BlueZ is busy with \(subject.noun); it will be tried again" + detail)
        case "org.bluez.Error.NotReady":
            self.init(.notPowered, "the adapter is not ready (powered off?)" + detail)
        case DBusError.Name.noReply.rawValue where error.message.contains("disconnected"):
            // The bus's answer for a call whose recipient left (dbus-daemon: "Message recipient
            // disconnected from message bus without replying"): bluetoothd is gone, and what it
            // held went with it. Any other NoReply is no answer at all.
            self.init(.bluezUnavailable, "bluetoothd left the system bus without answering" + detail)
        case DBusError.Name.noReply.rawValue, "org.freedesktop.DBus.Error.Timeout":
            self.init(.timeout, "BlueZ did not answer in time" + detail)
        case DBusError.Name.serviceUnknown.rawValue, DBusError.Name.nameHasNoOwner.rawValue, DBusError.Name.disconnected.rawValue:
            self.init(.bluezUnavailable, "bluetoothd is not running (no org.bluez on the system bus)" + detail)
        case DBusError.Name.unknownObject.rawValue, DBusError.Name.unknownMethod.rawValue, DBusError.Name.unknownInterface.rawValue:
            self.init(.noAdapter, "the adapter is gone or cannot \(subject.ability)" + detail)
        case DBusError.Name.accessDenied.rawValue:
            self.init(.accessDenied, "the system bus policy refused the call; see the bleadvd D-Bus policy file" + detail)
        default:
            self.init(.unknown, "\(error.name.rawValue): \(error.message)")
        }
    }
}
