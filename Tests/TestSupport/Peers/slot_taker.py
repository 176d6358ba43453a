#!/usr/bin/python3
"""A local program that takes every advertising slot that frees, with dbus-python (not our D-Bus
code): any local user may call LEAdvertisingManager1.RegisterAdvertisement (Debian's BlueZ
policy), so nothing stops one from registering the moment another program's advertisement goes.

  slot_taker.py BUS_ADDRESS ADAPTER_PATH

It watches the adapter's SupportedInstances and, whenever it is above 0, registers one more
advertisement of its own (broadcast, manufacturer data 0xFFFF = "ee"), at once. Prints "ready"
once it watches, then "took PATH" for every slot it got.
"""
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

AD = "org.bluez.LEAdvertisement1"
MANAGER = "org.bluez.LEAdvertisingManager1"
PROPS = "org.freedesktop.DBus.Properties"


class Advertisement(dbus.service.Object):
    def __init__(self, bus, path):
        super().__init__(bus, path)

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return {"Type": "broadcast",
                "ManufacturerData": dbus.Dictionary({dbus.UInt16(0xFFFF): dbus.Array([dbus.Byte(0xEE)], signature="y")},
                                                    signature="qv")}

    @dbus.service.method(AD)
    def Release(self):
        pass


def main():
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(sys.argv[1])
    adapter = sys.argv[2]
    manager = dbus.Interface(bus.get_object("org.bluez", adapter, introspect=False), MANAGER)
    state = {"next": 0, "asking": False}
    objects = {}

    def take():
        if state["asking"]:
            return
        state["asking"] = True
        path = "/org/taker/ad%d" % state["next"]
        if path not in objects:
            objects[path] = Advertisement(bus, path)

        def taken():
            state["next"] += 1
            state["asking"] = False
            print("took " + path, flush=True)
            # Another may be free already.
            free = bus.get_object("org.bluez", adapter, introspect=False).Get(MANAGER, "SupportedInstances", dbus_interface=PROPS)
            if free > 0:
                take()

        def refused(error):
            state["asking"] = False

        manager.RegisterAdvertisement(dbus.ObjectPath(path), dbus.Dictionary({}, signature="sv"),
                                      reply_handler=taken, error_handler=refused)

    def changed(interface, properties, invalidated):
        if interface == MANAGER and properties.get("SupportedInstances", 0) > 0:
            take()

    bus.add_signal_receiver(changed, signal_name="PropertiesChanged", dbus_interface=PROPS,
                            bus_name="org.bluez", path=adapter)
    # The match rule is in place once the bus answered a call after it.
    bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus").GetId(dbus_interface="org.freedesktop.DBus")
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
