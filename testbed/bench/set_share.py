#!/usr/bin/python3
"""bleadvd's own share of a `set`: the time from a client's `Set` call to the
`PropertiesChanged` bleadvd sends BlueZ for the new data (the client subscribes to it), less
the time of a `Ping` round trip to bleadvd through the same bus (the same hops, and the same
Python on both ends). The calls come 150 ms apart, past bleadvd's 100 ms between two changes
of one advertisement, so none is coalesced.

  set_share.py ADDRESS|--system NAME KEY COUNT

NAME is an advertisement on air whose KEY takes a number (a BTHome measurement). Prints the
medians, and the share with its spread."""
import statistics
import sys
import time

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

API = ("org.bleadvd.Advertiser", "/org/bleadvd/Advertiser", "org.bleadvd.Advertiser1")


def measure(bus, name, key, count):
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

    bus.add_signal_receiver(changed, signal_name="PropertiesChanged",
                            dbus_interface="org.freedesktop.DBus.Properties", bus_name=daemon,
                            path_keyword="path")

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
    bus = dbus.SystemBus() if where == "--system" else dbus.bus.BusConnection(where)
    sets, pings = measure(bus, name, key, count)
    if len(sets) < count // 2:
        raise SystemExit("set_share: only %d of %d Set calls were followed by a PropertiesChanged" % (len(sets), count))
    ping = statistics.median(pings)
    shares = [s - ping for s in sets]
    print("set: Set → PropertiesChanged %.3f ms, Ping round trip %.3f ms (medians of %d); "
          "bleadvd's own share %.3f ms [%.3f–%.3f]" % (
              statistics.median(sets), ping, len(sets), statistics.median(shares), min(shares), max(shares)))


if __name__ == "__main__":
    main()
