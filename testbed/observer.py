#!/usr/bin/python3
"""What a central hears: scans through bluetoothd on one adapter, the way a phone app would,
and prints one line per device heard during the scan.

  observer.py --adapter hci1 --seconds 4
  observer.py --adapter hci1 --seconds 20 --until name=Thermo --until manufacturer=0xffff:0102

Devices bluetoothd remembered from earlier scans are forgotten first, so only what is on air
now is reported; the scan restarts every second (RESTART_MS, below). With --until, the scan
ends as soon as one device's line holds every given text (exit 0), or after --seconds without
that (exit 1); without it, the scan lasts --seconds. With --changes, each device's line is
printed at once whenever it differs from what that device last showed (polled every 100 ms), so
a reader that is slower than the air (a decoder in a loaded guest) misses no payload that was on
air for a poll; its first line, "scanning", says the scan began. Line format (fields present only when heard):
  device ADDRESS name=NAME uuids=U1,U2 manufacturer=0xCCCC:HEX service_data=UUID:HEX tx_power=N
"""
import argparse
import sys
import time

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

BLUEZ = "org.bluez"
# Scanning restarts this often. Debian 12's virtual controllers (BlueZ 5.66's btdev.c) report
# an advertiser once, when scanning starts, and never again, and the kernel loses that first
# report about one time in two: 68 of 125 scan starts heard nothing on Debian 12.
# Each restart is another chance, so a scan of N seconds gives N of them, to "must be heard"
# and "must not be heard" checks alike. (BlueZ's 2025 "btdev: Broadcast EXT_ADV packets based
# on its interval" makes newer controllers report at the advertising interval; restarting costs
# those nothing.)
RESTART_MS = 1000


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
    parser.add_argument("--until", action="append", default=[],
                        help="stop once one device line contains this text (repeatable: all of them)")
    parser.add_argument("--changes", action="store_true",
                        help="print each device's line as it changes, as it is heard")
    args = parser.parse_args()

    DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    prefix = "/org/bluez/" + args.adapter
    manager = dbus.Interface(bus.get_object(BLUEZ, "/"), "org.freedesktop.DBus.ObjectManager")
    adapter = dbus.Interface(bus.get_object(BLUEZ, prefix), "org.bluez.Adapter1")

    for path, interfaces in manager.GetManagedObjects().items():
        if "org.bluez.Device1" in interfaces and path.startswith(prefix + "/"):
            adapter.RemoveDevice(path)

    # A central powers its adapter first (a crashed bluetoothd can leave it off). While
    # bluetoothd powers it on itself (AutoEnable), it refuses the Set with Busy: then the
    # adapter comes on without it.
    properties = dbus.Interface(bus.get_object(BLUEZ, prefix), "org.freedesktop.DBus.Properties")
    deadline = time.monotonic() + 20
    while not properties.Get("org.bluez.Adapter1", "Powered"):
        if time.monotonic() > deadline:
            sys.exit(args.adapter + " did not power on in 20 s")
        try:
            properties.Set("org.bluez.Adapter1", "Powered", dbus.Boolean(True))
        except dbus.exceptions.DBusException as error:
            if error.get_dbus_name() != "org.bluez.Error.Busy":
                raise
        time.sleep(0.2)
    adapter.SetDiscoveryFilter({"Transport": "le", "DuplicateData": dbus.Boolean(True)})
    adapter.StartDiscovery()
    if args.changes:
        print("scanning", flush=True)

    def heard():
        lines = []
        for path, interfaces in sorted(manager.GetManagedObjects().items()):
            device = interfaces.get("org.bluez.Device1")
            if device is not None and path.startswith(prefix + "/"):
                lines.append(describe(device["Address"], device))
        return lines

    def found(lines):
        return args.until and any(all(text in line for text in args.until) for line in lines)

    loop = GLib.MainLoop()
    GLib.timeout_add(int(args.seconds * 1000), loop.quit)
    if args.changes:
        shown = {}

        def show_changes():
            for line in heard():
                device = line.split(" ", 2)[1]
                if shown.get(device) != line:
                    shown[device] = line
                    print(line, flush=True)
            return True
        GLib.timeout_add(100, show_changes)
    # The lines that held every --until text, kept as they were heard: read again after the
    # loop, they can be gone. A restart's StopDiscovery, due at the same tick as the check
    # (every fourth), runs in the same turn of the loop after loop.quit(), and BlueZ removes
    # every temporary device that is neither connectable nor connected when the last scanner
    # stops (adapter.c's discovery_cleanup, 5.66 to 5.82): a broadcaster's line is gone. Seen in
    # scenario 75, 1 run in 8 on Debian 13 (and in CI's run of ae48879): the scan ended "found"
    # a second in, then printed no device at all and failed.
    matched = []
    if args.until:
        def check():
            lines = heard()
            if not found(lines):
                return True
            matched.extend(lines)
            loop.quit()
            return False
        GLib.timeout_add(250, check)

    def restart():
        adapter.StopDiscovery()
        adapter.StartDiscovery()
        return True
    GLib.timeout_add(RESTART_MS, restart)
    loop.run()
    lines = matched or heard()
    adapter.StopDiscovery()
    if not args.changes:
        print("\n".join(lines))
    if args.until and not found(lines):
        sys.exit(1)


if __name__ == "__main__":
    main()
