#!/usr/bin/python3
"""A NetworkManager stand-in for bleadvd's benchmarks, written with dbus-python (not our D-Bus
code), playing what NetworkManager 1.42 answers a user without polkit rules (as user bleadvd
is) where Improv's scan asks it:
- owns org.freedesktop.NetworkManager; GetDevices at /org/freedesktop/NetworkManager lists one
  managed Wi-Fi device (DeviceType 2, Managed true, State 30: disconnected);
- the device's RequestScan is refused as NetworkManager refuses it without the scan permission
  (org.freedesktop.NetworkManager.Device.NotAllowed), so LastScan stays; GetAllAccessPoints
  lists ACCESS_POINTS access points, each with Ssid, Strength, Flags, WpaFlags and RsnFlags
  (GetAll of org.freedesktop.NetworkManager.AccessPoint).
Every method call it answers is counted by interface and member: `Calls` of the control object
at /test (interface test.StandIn) returns them.

Usage: networkmanager_standin.py BUS_ADDRESS [ACCESS_POINTS]   (default 5; prints "ready" once
the name is owned)
"""
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

NM = "org.freedesktop.NetworkManager"
PROPS = "org.freedesktop.DBus.Properties"
DEVICE = NM + ".Device"
WIRELESS = NM + ".Device.Wireless"
ACCESS_POINT = NM + ".AccessPoint"
DEVICE_PATH = "/org/freedesktop/NetworkManager/Devices/1"
CONTROL = "test.StandIn"

calls = {}


def count(interface, member):
    key = interface + "." + member
    calls[key] = calls.get(key, 0) + 1


class NotAllowed(dbus.DBusException):
    _dbus_error_name = NM + ".Device.NotAllowed"


class Manager(dbus.service.Object):
    @dbus.service.method(NM, in_signature="", out_signature="ao")
    def GetDevices(self):
        count(NM, "GetDevices")
        return dbus.Array([dbus.ObjectPath(DEVICE_PATH)], signature="o")


class Properties(dbus.service.Object):
    """An object whose properties are read with Get and GetAll."""

    def __init__(self, bus, path, properties):
        super().__init__(bus, path)
        self.properties = properties

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        count(PROPS, "Get")
        try:
            return self.properties[interface][name]
        except KeyError:
            raise dbus.DBusException("No such property " + name, name="org.freedesktop.DBus.Error.InvalidArgs")

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        count(PROPS, "GetAll")
        return dbus.Dictionary(self.properties.get(interface, {}), signature="sv")


class Device(Properties):
    def __init__(self, bus, access_points):
        super().__init__(bus, DEVICE_PATH, {
            DEVICE: {"DeviceType": dbus.UInt32(2), "Managed": dbus.Boolean(True), "State": dbus.UInt32(30)},
            WIRELESS: {"LastScan": dbus.Int64(1000)},
        })
        self.access_points = access_points

    @dbus.service.method(WIRELESS, in_signature="a{sv}", out_signature="")
    def RequestScan(self, options):
        count(WIRELESS, "RequestScan")
        raise NotAllowed("Scanning not allowed while unauthorized")

    @dbus.service.method(WIRELESS, in_signature="", out_signature="ao")
    def GetAllAccessPoints(self):
        count(WIRELESS, "GetAllAccessPoints")
        return dbus.Array(self.access_points, signature="o")

    @dbus.service.signal(DEVICE, signature="uuu")
    def StateChanged(self, new, old, reason):
        pass


class Control(dbus.service.Object):
    @dbus.service.method(CONTROL, in_signature="", out_signature="a{su}")
    def Calls(self):
        return dbus.Dictionary({k: dbus.UInt32(v) for k, v in calls.items()}, signature="su")


def main():
    address = sys.argv[1]
    access_points = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    keep = [Manager(bus, "/org/freedesktop/NetworkManager"), Control(bus, "/test")]
    paths = []
    for n in range(access_points):
        path = "/org/freedesktop/NetworkManager/AccessPoint/%d" % (n + 1)
        keep.append(Properties(bus, path, {ACCESS_POINT: {
            "Ssid": dbus.Array(("network-%d" % n).encode(), signature="y"),
            "Strength": dbus.Byte(90 - 10 * n), "Flags": dbus.UInt32(1),
            "WpaFlags": dbus.UInt32(0), "RsnFlags": dbus.UInt32(0x188),
        }}))
        paths.append(dbus.ObjectPath(path))
    keep.append(Device(bus, paths))
    bus.request_name(NM, dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
    print("ready", flush=True)
    GLib.MainLoop().run()


if __name__ == "__main__":
    main()
