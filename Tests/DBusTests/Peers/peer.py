#!/usr/bin/python3
"""A D-Bus peer for bleadvd's tests, written with dbus-python so that a bug in our Swift layer
cannot hide in both ends. Owns test.peer and serves test.Peer at /peer.

Usage: peer.py BUS_ADDRESS   (prints "ready UNIQUE_NAME" once the name is owned)
"""
import os
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

IFACE = "test.Peer"
PROPERTIES = "org.freedesktop.DBus.Properties"
NESTED = "ybnqiuxtdsogva{sv}(iasv)aa{oa{sv}}a{ya(by)}"


class Peer(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, "/peer")
        self.bus = bus
        # test.Peer's properties, served through PROPERTIES by hand (dbus-python has none).
        self.properties = {"Name": dbus.String("peer"), "Level": dbus.Int32(3)}

    def _interface(self, interface):
        if interface != IFACE:
            raise dbus.exceptions.DBusException(
                "no interface " + interface, name="org.freedesktop.DBus.Error.UnknownInterface")

    @dbus.service.method(PROPERTIES, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        self._interface(interface)
        if name not in self.properties:
            raise dbus.exceptions.DBusException(
                "no property " + name, name="org.freedesktop.DBus.Error.UnknownProperty")
        return self.properties[name]

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        self._interface(interface)
        return dbus.Dictionary(self.properties, signature="sv")

    @dbus.service.method(PROPERTIES, in_signature="ssv", out_signature="")
    def Set(self, interface, name, value):
        self._interface(interface)
        if name not in self.properties:
            raise dbus.exceptions.DBusException(
                "no property " + name, name="org.freedesktop.DBus.Error.UnknownProperty")
        self.properties[name] = value

    @dbus.service.method(IFACE, in_signature="v", out_signature="v")
    def Echo(self, value):
        return value

    @dbus.service.method(IFACE, in_signature=NESTED, out_signature=NESTED)
    def EchoAll(self, y, b, n, q, i, u, x, t, d, s, o, g, v, asv, struct, aaoasv, ayaby):
        return (y, b, n, q, i, u, x, t, d, s, o, g, v, asv, struct, aaoasv, ayaby)

    @dbus.service.method(IFACE, in_signature="", out_signature="i")
    def Number(self):
        return 42

    @dbus.service.method(IFACE, in_signature="u", out_signature="",
                         async_callbacks=("reply", "error"))
    def Sleep(self, milliseconds, reply, error):
        GLib.timeout_add(milliseconds, lambda: reply() and False)

    @dbus.service.method(IFACE, in_signature="", out_signature="")
    def Vanish(self):
        os._exit(0)

    @dbus.service.method(IFACE, in_signature="s", out_signature="")
    def Fail(self, text):
        raise dbus.exceptions.DBusException(text, name="test.Peer.Error.Refused")

    @dbus.service.method(IFACE, in_signature="s", out_signature="")
    def Tick(self, text):
        self.Ticked(text)

    @dbus.service.signal(IFACE, signature="s")
    def Ticked(self, text):
        pass

    @dbus.service.method(IFACE, in_signature="sos", out_signature="s",
                         sender_keyword="caller", async_callbacks=("reply", "error"))
    def CallBack(self, interface, path, text, caller, reply, error):
        """Calls interface.Shout(text) on the caller and replies with its answer, only after
        the caller answered, the way BlueZ calls back during RegisterAdvertisement."""
        target = self.bus.get_object(caller, path, introspect=False)
        target.get_dbus_method("Shout", interface)(
            text, reply_handler=lambda answer: reply("called back: " + answer),
            error_handler=error)


def main():
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(sys.argv[1])
    name = dbus.service.BusName("test.peer", bus)
    peer = Peer(bus)
    print("ready " + bus.get_unique_name(), flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
