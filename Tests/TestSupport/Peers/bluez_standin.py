#!/usr/bin/python3
"""A BlueZ stand-in for bleadvd's contract tests, written with dbus-python (not our D-Bus code).

It behaves like bluetoothd 5.66 where it matters to an advertiser:
- owns org.bluez with an ObjectManager at / and adapters at /org/bluez/hciN, each with
  org.bluez.Adapter1 (Powered read-write; org.bluez.Error.Busy when told the adapter is changing
  its power already) and org.bluez.LEAdvertisingManager1;
- RegisterAdvertisement(o, a{sv}) does not reply at once: it first calls GetManagedObjects on the
  caller's path and, when that does not list the object, Properties.GetAll of LEAdvertisement1;
  it checks every property's signature the way BlueZ's parser does and replies
  "Failed to parse advertisement." on a wrong one; AlreadyExists, "Maximum advertisements
  reached", "Failed to register advertisement" (adapter off) and DoesNotExist as BlueZ does;
- follows PropertiesChanged of registered advertisements (changed and invalidated properties),
  as BlueZ refreshes them live; when
  told to, refuses the next refresh the way 5.66 to 5.73 do when the kernel refuses an update:
  it forgets the advertisement with no Release, no error and no signal;
- sends Release (no reply expected) when told to, or when an adapter is removed;
- GattManager1.RegisterApplication(o, a{sv}) as gatt-database.c does: GetManagedObjects on the
  caller's root, every GattService1 with UUID (s) and Primary (b), every GattCharacteristic1
  with UUID (s), Service (o, one of the application's services) and Flags (as, names BlueZ
  knows), else "Failed to register application"; it then reads and writes characteristics
  when told to (as a central's ATT request would make it) and records every PropertiesChanged
  of a characteristic's Value (what it would notify centrals of);
- AgentManager1 at /org/bluez (RegisterAgent, RequestDefaultAgent, UnregisterAgent) as
  agent.c does: a default agent makes the adapters pairable (main.conf AlwaysPairable=false);
  Adapter1.Pairable is read-write; devices (Device1 with Address, Paired, Bonded, Name) under
  an adapter, removed with Adapter1.RemoveDevice (and with their adapter, bonds kept), unpaired
  when told to (Paired and/or Bonded false); when told to, it asks the default agent as a
  central's pairing makes bluetoothd ask (RequestAuthorization, DisplayPasskey with no reply
  expected, RequestConfirmation), turns a device's Paired true, and its Connected true (a new central's object appearing
  connected) or false.

A control object at /test (interface test.StandIn) lets a test drive it and read what it saw.
Usage: bluez_standin.py BUS_ADDRESS [ADAPTER...]   (no adapter: none until AddAdapter)
         (prints "ready UNIQUE_NAME" once org.bluez is owned)
"""
import os
import socket
import sys

import dbus
import dbus.lowlevel
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

OM = "org.freedesktop.DBus.ObjectManager"
PROPS = "org.freedesktop.DBus.Properties"
ADAPTER = "org.bluez.Adapter1"
MANAGER = "org.bluez.LEAdvertisingManager1"
AD = "org.bluez.LEAdvertisement1"
CONTROL = "test.StandIn"
GATT_MANAGER = "org.bluez.GattManager1"
GATT_SERVICE = "org.bluez.GattService1"
GATT_CHARACTERISTIC = "org.bluez.GattCharacteristic1"
GATT_DESCRIPTOR = "org.bluez.GattDescriptor1"
AGENT_MANAGER = "org.bluez.AgentManager1"
AGENT = "org.bluez.Agent1"
DEVICE = "org.bluez.Device1"
CAPABILITIES = {"DisplayOnly", "DisplayYesNo", "KeyboardOnly", "NoInputNoOutput", "KeyboardDisplay", ""}
# The flags BlueZ 5.66 (and 5.82) parses for a characteristic (src/gatt-database.c, parse_chrc_flags).
GATT_FLAGS = {"broadcast", "read", "write-without-response", "write", "notify", "indicate",
              "authenticated-signed-writes", "extended-properties", "reliable-write",
              "writable-auxiliaries", "encrypt-read", "encrypt-write", "encrypt-authenticated-read",
              "encrypt-authenticated-write", "secure-read", "secure-write", "authorize",
              "encrypt-notify", "encrypt-authenticated-notify", "secure-notify", "encrypt-indicate",
              "encrypt-authenticated-indicate", "secure-indicate"}
# The central the stand-in reads and writes for, as a device option.
CENTRAL = "/org/bluez/hci0/dev_00_AA_02_00_00_01"

# BlueZ 5.66's parser: property -> D-Bus signature it accepts (src/advertising.c).
SIGNATURES = {
    "Type": "s", "ServiceUUIDs": "as", "SolicitUUIDs": "as", "ManufacturerData": "a{qv}",
    "ServiceData": "a{sv}", "Data": "a{yv}", "Discoverable": "b", "DiscoverableTimeout": "q",
    "Includes": "as", "LocalName": "s", "Appearance": "q", "Duration": "q", "Timeout": "q",
    "SecondaryChannel": "s", "MinInterval": "u", "MaxInterval": "u", "TxPower": "n",
}


def signature_of(value):
    """The D-Bus signature of a value as dbus-python unmarshalled it."""
    if isinstance(value, dbus.Dictionary):
        return "a{%s}" % value.signature if value.signature else "a{sv}"
    if isinstance(value, dbus.Array):
        return "a" + (value.signature or "v")
    table = [(dbus.Boolean, "b"), (dbus.Byte, "y"), (dbus.Int16, "n"), (dbus.UInt16, "q"),
             (dbus.Int32, "i"), (dbus.UInt32, "u"), (dbus.Int64, "x"), (dbus.UInt64, "t"),
             (dbus.Double, "d"), (dbus.ObjectPath, "o"), (dbus.Signature, "g"), (dbus.String, "s")]
    for kind, code in table:
        if isinstance(value, kind):
            return code
    return "?"


def parse_error(properties):
    """None when BlueZ's parser would accept the properties, else what it would stumble on."""
    if "Type" in properties and str(properties["Type"]) not in ("broadcast", "peripheral"):
        return "Type"
    for name, value in properties.items():
        expected = SIGNATURES.get(name)
        if expected is not None and signature_of(value) != expected:
            return "%s has %s, not %s" % (name, signature_of(value), expected)
        if name in ("ManufacturerData", "ServiceData", "Data"):
            for inner in value.values():
                if not (isinstance(inner, dbus.Array) and inner.signature == "y"):
                    return name + " variant does not hold ay"
    return None


def gatt_problem(objects):
    """What BlueZ 5.66 would refuse in an application's objects, or None."""
    services = {str(p) for p, i in objects.items() if GATT_SERVICE in i}
    if not services:
        return "no service"
    for path, interfaces in objects.items():
        if GATT_SERVICE in interfaces:
            props = interfaces[GATT_SERVICE]
            if signature_of(props.get("UUID")) != "s" or signature_of(props.get("Primary")) != "b":
                return "service %s: UUID (s) and Primary (b) needed" % path
        if GATT_CHARACTERISTIC in interfaces:
            props = interfaces[GATT_CHARACTERISTIC]
            if signature_of(props.get("UUID")) != "s" or signature_of(props.get("Flags")) != "as":
                return "characteristic %s: UUID (s) and Flags (as) needed" % path
            if str(props.get("Service")) not in services:
                return "characteristic %s: Service is not one of the application's" % path
            unknown = [f for f in props["Flags"] if f not in GATT_FLAGS]
            if unknown:
                return "characteristic %s: unknown flags %s" % (path, unknown)
        if GATT_DESCRIPTOR in interfaces:
            props = interfaces[GATT_DESCRIPTOR]
            if signature_of(props.get("UUID")) != "s" or signature_of(props.get("Flags")) != "as":
                return "descriptor %s: UUID (s) and Flags (as) needed" % path
            owner = objects.get(dbus.ObjectPath(str(props.get("Characteristic"))), {})
            if GATT_CHARACTERISTIC not in owner:
                return "descriptor %s: Characteristic is not one of the application's" % path
    return None


class Failed(dbus.DBusException):
    _dbus_error_name = "org.bluez.Error.Failed"


class NotPermitted(dbus.DBusException):
    _dbus_error_name = "org.bluez.Error.NotPermitted"


class AlreadyExists(dbus.DBusException):
    _dbus_error_name = "org.bluez.Error.AlreadyExists"


class DoesNotExist(dbus.DBusException):
    _dbus_error_name = "org.bluez.Error.DoesNotExist"


class Root(dbus.service.Object):
    def __init__(self, bus, standin):
        super().__init__(bus, "/")
        self.standin = standin

    @dbus.service.method(OM, out_signature="a{oa{sa{sv}}}", async_callbacks=("reply", "error"))
    def GetManagedObjects(self, reply, error):
        if self.standin.hung:
            # Answered once it answers again (Answer), as a continued bluetoothd takes its queue.
            self.standin.held.append(lambda: self.GetManagedObjects(reply, error))
            return self.standin.log("no reply to GetManagedObjects")
        # An adapter bluetoothd registered while this call waited in its queue: announced
        # first, then listed in the reply.
        for name in self.standin.adapters_when_asked:
            self.standin.add_adapter(name, announce=True)
        self.standin.adapters_when_asked = []
        objects = {a.path: a.interfaces() for a in self.standin.adapters.values()}
        for adapter in self.standin.adapters.values():
            objects.update({path: {DEVICE: props} for path, props in adapter.devices.items()})
        reply(objects)

    @dbus.service.signal(OM, signature="oa{sa{sv}}")
    def InterfacesAdded(self, path, interfaces):
        pass

    @dbus.service.signal(OM, signature="oas")
    def InterfacesRemoved(self, path, interfaces):
        pass


class AgentManager(dbus.service.Object):
    """org.bluez.AgentManager1 at /org/bluez, as src/agent.c answers."""
    def __init__(self, bus, standin):
        super().__init__(bus, "/org/bluez")
        self.standin = standin

    @dbus.service.method(AGENT_MANAGER, in_signature="os", sender_keyword="sender")
    def RegisterAgent(self, path, capability, sender):
        self.standin.log("RegisterAgent %s %s" % (path, capability))
        if capability not in CAPABILITIES:
            raise dbus.DBusException("Invalid Arguments", name="org.bluez.Error.InvalidArguments")
        if sender in self.standin.agents:
            raise AlreadyExists("Already Exists")
        self.standin.agents[sender] = (str(path), str(capability))

    @dbus.service.method(AGENT_MANAGER, in_signature="o", sender_keyword="sender")
    def RequestDefaultAgent(self, path, sender):
        self.standin.log("RequestDefaultAgent %s" % path)
        if self.standin.agents.get(sender, (None,))[0] != str(path):
            raise DoesNotExist("Does Not Exist")
        # agent.c's add_default_agent: the agent that is the default already changes nothing;
        # one that becomes it makes the adapters bondable (set_io_cap).
        if self.standin.default_agent == sender:
            return
        self.standin.default_agent = sender
        for adapter in self.standin.adapters.values():
            adapter.set_pairable(True)

    @dbus.service.method(AGENT_MANAGER, in_signature="o", sender_keyword="sender")
    def UnregisterAgent(self, path, sender):
        self.standin.log("UnregisterAgent %s" % path)
        if self.standin.agents.get(sender, (None,))[0] != str(path):
            raise DoesNotExist("Does Not Exist")
        del self.standin.agents[sender]
        if self.standin.default_agent == sender:
            self.standin.default_agent = None
            for adapter in self.standin.adapters.values():
                adapter.set_pairable(False)


class Adapter(dbus.service.Object):
    def __init__(self, bus, standin, name):
        self.path = "/org/bluez/" + name
        super().__init__(bus, self.path)
        self.standin = standin
        self.name = name
        self.address = "00:AA:01:00:00:%02X" % len(standin.adapters)
        self.powered = True
        self.power_busy = False
        self.free = 4
        self.active = 0
        self.registered = {}  # (sender, path) -> properties
        self.pairable = False
        self.devices = {}  # path -> Device1 properties
        self.alias = None  # adapter.c's stored_alias: Alias shows it, else the system's name
        self.bluez_release = "5.66"  # "5.82": the properties 5.71 and 5.79 added (SetRelease)

    def adapter_properties(self):
        properties = {"Address": self.address, "Name": self.name, "Alias": self.alias or self.name,
                      "Powered": dbus.Boolean(self.powered), "Pairable": dbus.Boolean(self.pairable)}
        if self.bluez_release == "5.82":
            properties.update({"Manufacturer": dbus.UInt16(0x05F1), "Connectable": dbus.Boolean(True)})
        return properties

    def manager_properties(self):
        return {"ActiveInstances": dbus.Byte(self.active), "SupportedInstances": dbus.Byte(self.free),
                "SupportedIncludes": dbus.Array(["tx-power", "appearance", "local-name"], signature="s"),
                "SupportedSecondaryChannels": dbus.Array(["1M", "2M"], signature="s"),
                "SupportedCapabilities": dbus.Dictionary({"MaxAdvLen": dbus.Byte(31)}, signature="sv")}

    def interfaces(self):
        return {ADAPTER: self.adapter_properties(), MANAGER: self.manager_properties(), GATT_MANAGER: {}}

    @dbus.service.method(GATT_MANAGER, in_signature="oa{sv}", sender_keyword="sender",
                         async_callbacks=("reply", "error"))
    def RegisterApplication(self, root, options, sender, reply, error):
        self.standin.log("RegisterApplication %s" % root)
        if (sender, root) in self.standin.applications:
            return error(AlreadyExists("Already Exists"))
        client = self.standin.bus.get_object(sender, root, introspect=False)

        def got_objects(objects):
            problem = gatt_problem(objects)
            if problem is not None:
                self.standin.log("application refused: " + problem)
                return error(Failed("Failed to register application"))
            self.standin.applications[(sender, root)] = (self.name, {str(p): i for p, i in objects.items()})
            self.standin.log("registered application %s" % root)
            reply()

        client.GetManagedObjects(dbus_interface=OM, reply_handler=got_objects,
                                 error_handler=lambda e: error(Failed("Failed to register application")))

    @dbus.service.method(GATT_MANAGER, in_signature="o", sender_keyword="sender")
    def UnregisterApplication(self, root, sender):
        self.standin.log("UnregisterApplication %s" % root)
        if self.standin.applications.pop((sender, root), None) is None:
            raise DoesNotExist("Does Not Exist")

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        return self.interfaces()[interface][name]

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.interfaces().get(interface, {})

    @dbus.service.method(PROPS, in_signature="ssv")
    def Set(self, interface, name, value):
        if interface != ADAPTER or name not in ("Powered", "Pairable", "Alias"):
            raise dbus.DBusException("not writable", name="org.bluez.Error.InvalidArguments")
        if name == "Alias":
            # property_set_alias: "" puts the system's name back.
            self.standin.log("Set Alias %s" % value)
            self.alias = str(value) or None
            self.PropertiesChanged(ADAPTER, {"Alias": self.alias or self.name}, [])
            return
        self.standin.log("Set %s %s" % (name, bool(value)))
        if name == "Powered" and self.power_busy:
            # As bluetoothd while its own power change is pending (adapter.c, property_set_mode).
            raise dbus.DBusException(name="org.bluez.Error.Busy")
        if name == "Powered":
            self.set_powered(bool(value))
        else:
            self.set_pairable(bool(value))

    @dbus.service.method(ADAPTER, in_signature="o")
    def RemoveDevice(self, path):
        self.standin.log("RemoveDevice %s" % path)
        if self.devices.pop(str(path), None) is None:
            raise DoesNotExist("Does Not Exist")
        self.standin.root.InterfacesRemoved(path, [DEVICE])

    def set_pairable(self, pairable):
        if pairable != self.pairable:
            self.pairable = pairable
            self.PropertiesChanged(ADAPTER, {"Pairable": dbus.Boolean(pairable)}, [])

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    def set_powered(self, powered):
        if powered != self.powered:
            self.powered = powered
            self.PropertiesChanged(ADAPTER, {"Powered": dbus.Boolean(powered)}, [])

    def update_instances(self):
        self.PropertiesChanged(MANAGER, {"ActiveInstances": dbus.Byte(self.active),
                                         "SupportedInstances": dbus.Byte(self.free)}, [])

    @dbus.service.method(MANAGER, in_signature="oa{sv}", sender_keyword="sender",
                         async_callbacks=("reply", "error"))
    def RegisterAdvertisement(self, path, options, sender, reply, error):
        self.standin.log("RegisterAdvertisement %s" % path)
        if self.standin.hung:
            return self.standin.log("no reply to RegisterAdvertisement %s" % path)
        if (sender, path) in self.registered:
            return error(AlreadyExists("Already Exists"))
        if self.free == 0:
            return error(NotPermitted("Maximum advertisements reached"))
        # register_advertisement takes the instance at once, before it reads the properties:
        # a second request meanwhile counts it as taken.
        self.free -= 1
        self.active += 1
        client = self.standin.bus.get_object(sender, path, introspect=False)

        def give_back():
            self.free += 1
            self.active -= 1

        def finish(properties):
            problem = parse_error(properties)
            if problem is not None:
                give_back()
                self.standin.log("parse failed: " + problem)
                return error(Failed("Failed to parse advertisement."))
            if not self.powered:
                give_back()
                return error(Failed("Failed to register advertisement"))
            self.registered[(sender, path)] = dict(properties)
            self.update_instances()
            self.standin.log("registered %s" % path)
            if self.standin.silence_next_registration:
                self.standin.silence_next_registration = False
                return self.standin.log("no reply to RegisterAdvertisement %s" % path)
            if self.standin.leave_before_next_reply:
                # The reply comes after org.bluez changed owner: from a bluetoothd that left.
                self.standin.leave_before_next_reply = False
                self.standin.bus.release_name("org.bluez")
                self.standin.log("released org.bluez before replying")
            reply()

        def got_all(properties):
            finish(properties)

        def got_objects(objects):
            if dbus.ObjectPath(path) in objects and AD in objects[dbus.ObjectPath(path)]:
                return finish(objects[dbus.ObjectPath(path)][AD])
            self.standin.log("GetAll %s" % path)
            client.GetAll(AD, dbus_interface=PROPS, reply_handler=got_all,
                          error_handler=lambda e: (give_back(), error(Failed("Failed to parse advertisement."))))

        self.standin.log("GetManagedObjects %s" % path)
        client.GetManagedObjects(dbus_interface=OM, reply_handler=got_objects,
                                 error_handler=lambda e: got_objects({}))

    @dbus.service.method(MANAGER, in_signature="o", sender_keyword="sender", async_callbacks=("reply", "error"))
    def UnregisterAdvertisement(self, path, sender, reply, error):
        self.standin.log("UnregisterAdvertisement %s" % path)
        if self.standin.ignore_next_unregistration:
            self.standin.ignore_next_unregistration = False
            return self.standin.log("ignored UnregisterAdvertisement %s" % path)
        if self.standin.hung:
            return self.standin.log("no reply to UnregisterAdvertisement %s" % path)
        if (sender, path) not in self.registered:
            return error(DoesNotExist("Does Not Exist"))
        self.drop(sender, path)
        reply()

    def drop(self, sender, path):
        del self.registered[(sender, path)]
        self.free += 1
        self.active -= 1
        self.update_instances()

    def release(self, sender, path):
        """What BlueZ does when it removes an advertisement itself."""
        self.drop(sender, path)
        message = dbus.lowlevel.MethodCallMessage(sender, path, AD, "Release")
        message.set_no_reply(True)  # as BlueZ sends it
        self.standin.bus.send_message(message)
        self.standin.log("Release %s" % path)

    def property_changed(self, sender, path, interface, changed, invalidated=()):
        if interface == AD and (sender, path) in self.registered:
            if self.standin.refuse_update:
                self.standin.refuse_update = False
                del self.registered[(sender, path)]  # add_client_complete: no signal, no Release
                self.free += 1
                self.active -= 1
                return self.standin.log("dropped %s (update refused)" % path)
            self.registered[(sender, path)].update(changed)
            # gdbus's client: an invalidated property goes, and the parser is called without a
            # value (src/advertising.c's parse_* clear it).
            for name in invalidated:
                self.registered[(sender, path)].pop(str(name), None)
            self.standin.log("refreshed %s %s" % (path, ",".join(sorted(changed) + ["-" + str(n) for n in invalidated])))


class Control(dbus.service.Object):
    def __init__(self, bus, standin):
        super().__init__(bus, "/test")
        self.standin = standin

    @dbus.service.method(CONTROL, out_signature="as")
    def Calls(self):
        return self.standin.calls

    @dbus.service.method(CONTROL, out_signature="a{sa{sv}}")
    def Advertisements(self):
        return {str(path): props for a in self.standin.adapters.values()
                for (_, path), props in a.registered.items()}

    @dbus.service.method(CONTROL, in_signature="s")
    def Release(self, path):
        for adapter in self.standin.adapters.values():
            for sender, registered in list(adapter.registered):
                if registered == path:
                    adapter.release(sender, registered)

    @dbus.service.method(CONTROL, in_signature="sb")
    def SetPowered(self, name, powered):
        self.standin.adapters[name].set_powered(powered)

    @dbus.service.method(CONTROL, in_signature="sb")
    def SetPowerBusy(self, name, busy):
        """While busy, Set Powered is refused with org.bluez.Error.Busy, as while bluetoothd
        powers the adapter on itself."""
        self.standin.adapters[name].power_busy = bool(busy)

    @dbus.service.method(CONTROL, in_signature="sy")
    def SetFreeInstances(self, name, free):
        self.standin.adapters[name].free = int(free)

    @dbus.service.method(CONTROL, in_signature="s")
    def RemoveAdapter(self, name):
        adapter = self.standin.adapters.pop(name)
        # As adapter_remove (src/adapter.c): each device object goes first, its bond kept on disk.
        for path in list(adapter.devices):
            self.standin.root.InterfacesRemoved(path, [DEVICE])
        adapter.devices = {}
        for sender, path in list(adapter.registered):
            adapter.release(sender, path)
        self.standin.root.InterfacesRemoved(adapter.path, [MANAGER, ADAPTER])
        adapter.remove_from_connection()

    @dbus.service.method(CONTROL, in_signature="s")
    def AddAdapter(self, name):
        self.standin.add_adapter(name, announce=True)

    @dbus.service.method(CONTROL, in_signature="s")
    def AddAdapterWhenAsked(self, name):
        """Adds and announces the adapter during the next GetManagedObjects, before its reply."""
        self.standin.adapters_when_asked.append(name)

    @dbus.service.method(CONTROL)
    def RefuseNextUpdate(self):
        """The next refresh fails in the kernel, and BlueZ forgets the advertisement silently."""
        self.standin.refuse_update = True

    @dbus.service.method(CONTROL)
    def SilenceNextRegistration(self):
        """The next advertisement is registered, but its caller never gets the reply."""
        self.standin.silence_next_registration = True

    @dbus.service.method(CONTROL)
    def IgnoreNextUnregistration(self):
        """The next UnregisterAdvertisement neither unregisters nor gets a reply."""
        self.standin.ignore_next_unregistration = True

    @dbus.service.method(CONTROL)
    def LeaveBeforeNextReply(self):
        """The next registration is answered after the stand-in gave up org.bluez."""
        self.standin.leave_before_next_reply = True

    @dbus.service.method(CONTROL)
    def Hang(self):
        """From now on BlueZ's own calls get no reply at all, as from a frozen bluetoothd."""
        self.standin.hung = True

    @dbus.service.method(CONTROL)
    def Answer(self):
        """BlueZ answers its calls again, as a bluetoothd continued (SIGCONT): the
        GetManagedObjects it held first; the other calls it left unanswered stay so."""
        self.standin.hung = False
        held, self.standin.held = self.standin.held, []
        for answer in held:
            answer()

    @dbus.service.method(CONTROL, out_signature="a{sa{sa{sv}}}")
    def GattObjects(self):
        """Every registered application's objects, by path."""
        return {path: interfaces for _, objects in self.standin.applications.values()
                for path, interfaces in objects.items()}

    @dbus.service.method(CONTROL, in_signature="sq", out_signature="ay", async_callbacks=("reply", "error"))
    def ReadCharacteristic(self, path, offset, reply, error):
        """ReadValue on a registered characteristic, as a central's read makes BlueZ call it."""
        sender = self.standin.owner_of(path)
        client = self.standin.bus.get_object(sender, path, introspect=False)
        client.ReadValue(dbus.Dictionary({"offset": dbus.UInt16(offset), "device": dbus.ObjectPath(CENTRAL),
                                          "mtu": dbus.UInt16(23)}, signature="sv"),
                         dbus_interface=GATT_CHARACTERISTIC, reply_handler=lambda value: reply(bytes(value)),
                         error_handler=error)

    @dbus.service.method(CONTROL, in_signature="s", out_signature="ay", async_callbacks=("reply", "error"))
    def ReadDescriptor(self, path, reply, error):
        """ReadValue on a registered descriptor, as a central's read makes BlueZ call it."""
        client = self.standin.bus.get_object(self.standin.owner_of(path), path, introspect=False)
        client.ReadValue(dbus.Dictionary({"offset": dbus.UInt16(0), "device": dbus.ObjectPath(CENTRAL)}, signature="sv"),
                         dbus_interface=GATT_DESCRIPTOR, reply_handler=lambda value: reply(bytes(value)),
                         error_handler=error)

    @dbus.service.method(CONTROL, in_signature="say", out_signature="s", async_callbacks=("reply", "error"))
    def WriteCharacteristic(self, path, value, reply, error):
        """WriteValue on a registered characteristic; replies "" or the error name BlueZ got."""
        sender = self.standin.owner_of(path)
        client = self.standin.bus.get_object(sender, path, introspect=False)
        options = dbus.Dictionary({"offset": dbus.UInt16(0), "type": "request", "device": dbus.ObjectPath(CENTRAL),
                                   "mtu": dbus.UInt16(23)}, signature="sv")
        client.WriteValue(dbus.Array(value, signature="y"), options, dbus_interface=GATT_CHARACTERISTIC,
                          reply_handler=lambda: reply(""), error_handler=lambda e: reply(e.get_dbus_name()))

    @dbus.service.method(CONTROL, in_signature="sb", async_callbacks=("reply", "error"))
    def Subscribe(self, path, on, reply, error):
        """StartNotify or StopNotify, as BlueZ calls them when a central subscribes."""
        sender = self.standin.owner_of(path)
        client = self.standin.bus.get_object(sender, path, introspect=False)
        getattr(client, "StartNotify" if on else "StopNotify")(
            dbus_interface=GATT_CHARACTERISTIC, reply_handler=lambda: reply(), error_handler=error)

    @dbus.service.method(CONTROL, in_signature="ss")
    def SetRelease(self, name, release):
        """Makes the adapter's properties those of BlueZ 5.66 or 5.82 (Manufacturer, Connectable)."""
        self.standin.adapters[name].bluez_release = release

    @dbus.service.method(CONTROL, in_signature="ssq", out_signature="s", async_callbacks=("reply", "error"))
    def AcquireNotify(self, path, address, mtu, reply, error):
        """AcquireNotify, as BlueZ 5.69 and later call it when a central turns notifications on
        (a characteristic with NotifyAcquired); keeps the socket; replies "" or the error name."""
        client = self.standin.bus.get_object(self.standin.owner_of(path), path, introspect=False)
        device = "/org/bluez/hci0/dev_" + address.replace(":", "_")
        options = dbus.Dictionary({"device": dbus.ObjectPath(device), "link": "LE", "mtu": dbus.UInt16(mtu)}, signature="sv")

        def acquired(fd, mtu_back):
            self.standin.sockets[(path, address)] = socket.socket(fileno=fd.take())
            self.standin.counted.pop((path, address), None)
            self.standin.log("acquired %s %s %d" % (path, address, mtu_back))
            reply("")
        client.AcquireNotify(options, dbus_interface=GATT_CHARACTERISTIC, reply_handler=acquired,
                             error_handler=lambda e: reply(e.get_dbus_name()))

    @dbus.service.method(CONTROL, in_signature="ss", out_signature="aay")
    def Notifications(self, path, address):
        """What the socket of that central holds, one value a packet, read until it is empty."""
        endpoint = self.standin.sockets[(path, address)]
        values = []
        while True:
            try:
                packet = endpoint.recv(512, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            if not packet:  # closed by bleadvd
                break
            values.append(dbus.ByteArray(packet))
        return dbus.Array(values, signature="ay")

    @dbus.service.method(CONTROL, in_signature="ss")
    def DrainNotify(self, path, address):
        """Reads that central's socket whenever it has something, as bluetoothd does, counting
        the packets (Counted); a socket not drained fills."""
        endpoint = self.standin.sockets[(path, address)]
        self.standin.counted[(path, address)] = [0, b""]

        def readable(_fd, _condition):
            try:
                while True:
                    packet = endpoint.recv(512, socket.MSG_DONTWAIT)
                    if not packet:
                        return False
                    self.standin.counted[(path, address)] = [self.standin.counted[(path, address)][0] + 1, packet]
            except BlockingIOError:
                return True
        GLib.io_add_watch(endpoint.fileno(), GLib.IO_IN | GLib.IO_HUP, readable)

    @dbus.service.method(CONTROL, in_signature="ss", out_signature="uay")
    def Counted(self, path, address):
        """The packets DrainNotify read from that central's socket, and the last."""
        count, last = self.standin.counted.get((path, address), [0, b""])
        return dbus.UInt32(count), dbus.ByteArray(last)

    @dbus.service.method(CONTROL, in_signature="ss")
    def CloseNotify(self, path, address):
        """Closes that central's socket, as BlueZ does when it turns notifications off or leaves."""
        self.standin.sockets.pop((path, address)).close()

    @dbus.service.method(CONTROL, out_signature="a(ss)")
    def Agents(self):
        """The registered agents (path, capability), the default first."""
        agents = sorted(self.standin.agents.items(), key=lambda item: item[0] != self.standin.default_agent)
        return [dbus.Struct(agent, signature="ss") for _, agent in agents]

    @dbus.service.method(CONTROL, in_signature="s", out_signature="b")
    def Pairable(self, name):
        return self.standin.adapters[name].pairable

    @dbus.service.method(CONTROL, in_signature="sssb")
    def AddDevice(self, adapter, address, name, bonded):
        """A device under the adapter, as one that connected (and bonded, when told)."""
        path = "/org/bluez/%s/dev_%s" % (adapter, address.replace(":", "_"))
        props = {"Address": address, "Paired": dbus.Boolean(bonded), "Bonded": dbus.Boolean(bonded),
                 "Adapter": dbus.ObjectPath("/org/bluez/" + adapter)}
        if name:
            props["Name"] = name
        self.standin.adapters[adapter].devices[path] = props
        self.standin.root.InterfacesAdded(path, {DEVICE: props})

    @dbus.service.method(CONTROL, in_signature="ss")
    def Pair(self, adapter, address):
        """The device finished pairing: Paired (and Bonded) turn true."""
        path = "/org/bluez/%s/dev_%s" % (adapter, address.replace(":", "_"))
        self.standin.adapters[adapter].devices[path].update({"Paired": dbus.Boolean(True), "Bonded": dbus.Boolean(True)})
        emitter = Devices(self.standin.bus, path)
        emitter.PropertiesChanged(DEVICE, {"Paired": dbus.Boolean(True), "Bonded": dbus.Boolean(True)}, [])
        emitter.remove_from_connection()

    @dbus.service.method(CONTROL, in_signature="ssas")
    def Unpair(self, adapter, address, names):
        """The device was unpaired (btmgmt unpair, say): the properties named (Paired, Bonded)
        turn false, in one PropertiesChanged; the object stays."""
        path = "/org/bluez/%s/dev_%s" % (adapter, address.replace(":", "_"))
        changed = {str(name): dbus.Boolean(False) for name in names}
        self.standin.adapters[adapter].devices[path].update(changed)
        emitter = Devices(self.standin.bus, path)
        emitter.PropertiesChanged(DEVICE, changed, [])
        emitter.remove_from_connection()

    @dbus.service.method(CONTROL, in_signature="ss")
    def Connect(self, adapter, address):
        """A central's link came up. One bluetoothd never saw gets its object then, Connected
        already true (InterfacesAdded, no PropertiesChanged); a known one's Connected turns true."""
        path = "/org/bluez/%s/dev_%s" % (adapter, address.replace(":", "_"))
        devices = self.standin.adapters[adapter].devices
        if path not in devices:
            devices[path] = {"Address": address, "Paired": dbus.Boolean(False), "Bonded": dbus.Boolean(False),
                             "Connected": dbus.Boolean(True), "Adapter": dbus.ObjectPath("/org/bluez/" + adapter)}
            self.standin.root.InterfacesAdded(path, {DEVICE: devices[path]})
            return
        devices[path]["Connected"] = dbus.Boolean(True)
        emitter = Devices(self.standin.bus, path)
        emitter.PropertiesChanged(DEVICE, {"Connected": dbus.Boolean(True)}, [])
        emitter.remove_from_connection()

    @dbus.service.method(CONTROL, in_signature="ss")
    def Disconnect(self, adapter, address):
        """The device's link ended: Connected turns false, as bluetoothd says it."""
        path = "/org/bluez/%s/dev_%s" % (adapter, address.replace(":", "_"))
        self.standin.adapters[adapter].devices[path]["Connected"] = dbus.Boolean(False)
        emitter = Devices(self.standin.bus, path)
        emitter.PropertiesChanged(DEVICE, {"Connected": dbus.Boolean(False)}, [])
        emitter.remove_from_connection()

    @dbus.service.method(CONTROL, in_signature="ssu", out_signature="s", async_callbacks=("reply", "error"))
    def AskAgent(self, kind, device, passkey, reply, error):
        """Asks the default agent about a central's pairing, as bluetoothd does; replies "" or
        the error name. kind: authorize, passkey (no reply expected), confirm."""
        sender = self.standin.default_agent
        if sender is None:
            return reply("no agent")
        path = self.standin.agents[sender][0]
        self.standin.log("ask %s %s" % (kind, device))
        if kind == "passkey":
            message = dbus.lowlevel.MethodCallMessage(sender, path, AGENT, "DisplayPasskey")
            message.append(dbus.ObjectPath(device), dbus.UInt32(passkey), dbus.UInt16(0), signature="ouq")
            message.set_no_reply(True)
            self.standin.bus.send_message(message)
            return reply("")
        agent = self.standin.bus.get_object(sender, path, introspect=False)
        done = dict(reply_handler=lambda: reply(""), error_handler=lambda e: reply(e.get_dbus_name()), timeout=30)
        if kind == "authorize":
            agent.RequestAuthorization(dbus.ObjectPath(device), dbus_interface=AGENT, **done)
        else:
            agent.RequestConfirmation(dbus.ObjectPath(device), dbus.UInt32(passkey), dbus_interface=AGENT, **done)

    @dbus.service.method(CONTROL, in_signature="sqn")
    def SetTxPower(self, path, unused, power):
        """Calls Properties.Set(TxPower) on a registered advertisement, as BlueZ may."""
        for adapter in self.standin.adapters.values():
            for sender, registered in adapter.registered:
                if registered == path:
                    client = self.standin.bus.get_object(sender, path, introspect=False)
                    client.Set(AD, "TxPower", dbus.Int16(power, variant_level=1), dbus_interface=PROPS)


class Devices(dbus.service.Object):
    """Emits a device's PropertiesChanged from its own path, as bluetoothd does."""
    def __init__(self, bus, path):
        super().__init__(bus, path)

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass


class StandIn:
    def __init__(self, bus, names):
        self.bus = bus
        self.calls = []
        self.adapters = {}
        self.adapters_when_asked = []
        self.hung = False
        self.held = []
        self.refuse_update = False
        self.silence_next_registration = False
        self.leave_before_next_reply = False
        self.ignore_next_unregistration = False
        self.applications = {}  # (sender, root) -> (adapter, {path: interfaces})
        self.sockets = {}  # (characteristic path, central address) -> AcquireNotify's descriptor
        self.counted = {}  # (characteristic path, central address) -> [packets drained, the last]
        self.agents = {}  # sender -> (path, capability)
        self.default_agent = None
        self.agent_manager = AgentManager(bus, self)
        self.root = Root(bus, self)
        self.control = Control(bus, self)
        for name in names:
            self.add_adapter(name, announce=False)
        bus.add_signal_receiver(self.on_properties_changed, signal_name="PropertiesChanged",
                                dbus_interface=PROPS, sender_keyword="sender", path_keyword="path")

    def log(self, text):
        self.calls.append(text)

    def add_adapter(self, name, announce):
        adapter = Adapter(self.bus, self, name)
        self.adapters[name] = adapter
        if announce:
            # Like bluetoothd: the adapter first, its advertising manager after the controller answered.
            self.root.InterfacesAdded(adapter.path, {ADAPTER: adapter.adapter_properties()})
            self.root.InterfacesAdded(adapter.path, {MANAGER: adapter.manager_properties()})

    def owner_of(self, path):
        for (sender, _), (_, objects) in self.applications.items():
            if path in objects:
                return sender
        raise DoesNotExist("no registered characteristic at " + path)

    def on_properties_changed(self, interface, changed, invalidated, sender=None, path=None):
        if interface == GATT_CHARACTERISTIC and "Value" in changed and any(
                sender == s and path in objects for (s, _), (_, objects) in self.applications.items()):
            self.log("notified %s %s" % (path, bytes(changed["Value"]).hex()))
        for adapter in self.adapters.values():
            adapter.property_changed(sender, path, interface, changed, invalidated)


def main():
    DBusGMainLoop(set_as_default=True)
    # Started by the bus (activation): the bus's address is in the environment.
    address = os.environ["DBUS_STARTER_ADDRESS"] if sys.argv[1] == "--activated" else sys.argv[1]
    bus = dbus.bus.BusConnection(address)
    names = sys.argv[2:]
    standin = StandIn(bus, names)
    bus.request_name("org.bluez", dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
    print("ready " + bus.get_unique_name(), flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
