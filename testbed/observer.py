#!/usr/bin/python3
"""What a central hears: scans through bluetoothd on one adapter, the way a phone app would,
and prints one line per device heard during the scan.

  observer.py --adapter hci1 --seconds 4

Devices bluetoothd remembered from earlier scans are forgotten first, so only what is on air
now is reported. Line format (fields present only when heard):
  device ADDRESS name=NAME uuids=U1,U2 manufacturer=0xCCCC:HEX service_data=UUID:HEX tx_power=N
"""
import argparse

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

BLUEZ = "org.bluez"


def describe(address, device):
    fields = ["device " + str(address)]
    if "Name" in device:
        fields.append("name=" + str(device["Name"]))
    if device.get("UUIDs"):
        fields.append("uuids=" + ",".join(sorted(str(u) for u in device["UUIDs"])))
    for company, data in sorted(device.get("ManufacturerData", {}).items()):
        fields.append("manufacturer=0x%04x:%s" % (int(company), bytes(data).hex()))
    for uuid, data in sorted(device.get("ServiceData", {}).items()):
        fields.append("service_data=%s:%s" % (uuid, bytes(data).hex()))
    if "TxPower" in device:
        fields.append("tx_power=%d" % int(device["TxPower"]))
    return " ".join(fields)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default="hci1")
    parser.add_argument("--seconds", type=float, default=4)
    args = parser.parse_args()

    DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    prefix = "/org/bluez/" + args.adapter
    manager = dbus.Interface(bus.get_object(BLUEZ, "/"), "org.freedesktop.DBus.ObjectManager")
    adapter = dbus.Interface(bus.get_object(BLUEZ, prefix), "org.bluez.Adapter1")

    for path, interfaces in manager.GetManagedObjects().items():
        if "org.bluez.Device1" in interfaces and path.startswith(prefix + "/"):
            adapter.RemoveDevice(path)

    adapter.SetDiscoveryFilter({"Transport": "le", "DuplicateData": dbus.Boolean(True)})
    adapter.StartDiscovery()
    loop = GLib.MainLoop()
    GLib.timeout_add(int(args.seconds * 1000), loop.quit)
    loop.run()
    objects = manager.GetManagedObjects()
    adapter.StopDiscovery()

    for path, interfaces in sorted(objects.items()):
        device = interfaces.get("org.bluez.Device1")
        if device is not None and path.startswith(prefix + "/"):
            print(describe(device["Address"], device))


if __name__ == "__main__":
    main()
