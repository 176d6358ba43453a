#!/usr/bin/python3
"""bleadvd's own share of a `set`: the time from a client's `Set` call to the
`PropertiesChanged` bleadvd sends BlueZ for the new data (seen by a bus monitor), less
the time of a `Ping` round trip to bleadvd through the same bus (the same hops, and the same
Python on both ends). The calls come 150 ms apart, past bleadvd's 100 ms between two changes
of one advertisement, so none is coalesced.

  set_share.py ADDRESS|--system NAME KEY COUNT

NAME is an advertisement on air whose KEY takes a number (a BTHome measurement). Prints the
medians, and the share with its spread."""
import os
import statistics
import sys
import time

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

API = ("org.bleadvd.Advertiser", "/org/bleadvd/Advertiser", "org.bleadvd.Advertiser1")


def measure(bus, bus_address, name, key, count):
    """(Set → PropertiesChanged, Ping round trip), each in milliseconds, `count` of each."""
    loop = GLib.MainLoop()
    daemon = bus.get_name_owner(API[0])
    advertiser = dbus.Interface(bus.get_object(API[0], API[1]), API[2])
    peer = dbus.Interface(bus.get_object(API[0], API[1]), "org.freedesktop.DBus.Peer")
    sets, pings = [], []
    state = {"step": 0, "start": None}

    def changed(*_, **where):
        if state["start"] is not None and where["path"].startswith("/org/bleadvd/advertisement/"):
            sets.append(1000 * (time.perf_counter() - state["start"]))
            state["start"] = None

    # bleadvd sends its objects' changes to bluetoothd alone: a monitor (root's, or anyone's on
    # a bus that allows it) sees them as the bus delivers them.
    monitor = dbus.bus.BusConnection(bus_address)
    monitor.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Monitoring",
                          "BecomeMonitor", "asu",
                          (["type='signal',sender='%s',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'" % daemon], 0))

    def seen(_, message):
        if message.get_member() == "PropertiesChanged" and message.get_path():
            changed(path=message.get_path())

    monitor.add_message_filter(seen)

    def step():
        if state["step"] == count:
            loop.quit()
            return False
        begin = time.perf_counter()
        peer.Ping()
        pings.append(1000 * (time.perf_counter() - begin))
        state["start"] = time.perf_counter()
        advertiser.Set(name, {key: dbus.Double(20 + state["step"] / 100)}, signature="sa{sv}",
                       reply_handler=lambda: None, error_handler=lambda e: print("Set:", e))
        state["step"] += 1
        return True

    GLib.timeout_add(150, step)
    loop.run()
    return sets, pings


def main():
    DBusGMainLoop(set_as_default=True)
    where, name, key, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    address = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/run/dbus/system_bus_socket") if where == "--system" else where
    bus = dbus.bus.BusConnection(address)
    sets, pings = measure(bus, address, name, key, count)
    if len(sets) < count // 2:
        raise SystemExit("set_share: only %d of %d Set calls were followed by a PropertiesChanged" % (len(sets), count))
    ping = statistics.median(pings)
    shares = [s - ping for s in sets]
    print("set: Set → PropertiesChanged %.3f ms, Ping round trip %.3f ms (medians of %d); "
          "bleadvd's own share %.3f ms [%.3f–%.3f]" % (
              statistics.median(sets), ping, len(sets), statistics.median(shares), min(shares), max(shares)))


if __name__ == "__main__":
    main()
