#!/usr/bin/python3
"""Notifications as fast as bleadvd takes them, natively against BlueZ's stand-in: COUNT values
of the characteristic with UUID (uint16, 0, 1, 2, ...), WINDOW calls in flight at a time.

  notify_flood.py ADDRESS UUID COUNT value             # Set: every subscriber, a PropertiesChanged
                                                       # of Value (coalesced to one per 100 ms)
  notify_flood.py ADDRESS UUID COUNT sockets N [STALLED]  # Notify, round robin over N centrals,
                                                       # each through its socket, which the stand-in
                                                       # drains as bluetoothd does (the first
                                                       # STALLED not at all)

Prints one line: calls answered, errors, the wall time and rate, and what reached the
centrals (PropertiesChanged seen by the stand-in, or packets drained from each socket, with the
last value)."""
import sys
import time

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

CENTRALS = ["00:AA:02:00:00:%02X" % (n + 1) for n in range(8)]


def main():
    address, uuid, count, mode = sys.argv[1], sys.argv[2].lower(), int(sys.argv[3]), sys.argv[4]
    centrals = CENTRALS[:int(sys.argv[5])] if mode == "sockets" else []
    stalled = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    standin = dbus.Interface(bus.get_object("org.bluez", "/test"), "test.StandIn")
    control = dbus.Interface(bus.get_object("org.bleadvd.Advertiser", "/org/bleadvd/Advertiser"), "org.bleadvd.Advertiser1")
    path = next(p for p, interfaces in standin.GattObjects().items()
                if str(interfaces.get("org.bluez.GattCharacteristic1", {}).get("UUID", "")).lower() == uuid)
    for n, central in enumerate(centrals):
        refusal = standin.AcquireNotify(path, central, dbus.UInt16(247))
        if refusal:
            sys.exit("AcquireNotify for %s: %s" % (central, refusal))
        if n >= stalled:
            standin.DrainNotify(path, central)
    notified_before = sum(1 for line in standin.Calls() if line.startswith("notified " + path))
    loop = GLib.MainLoop()
    state = {"sent": 0, "answered": 0, "errors": 0, "error": ""}

    def answered(error=None):
        state["answered"] += 1
        if error:
            state["errors"] += 1
            state["error"] = error
        if state["answered"] == count:
            loop.quit()
        elif state["sent"] < count:
            send()

    def send():
        value = dbus.Dictionary({"level": dbus.UInt16(state["sent"] & 0xFFFF)}, signature="sv")
        if centrals:
            central = centrals[state["sent"] % len(centrals)]
            control.Notify("meter", central, value, reply_handler=answered, error_handler=lambda e: answered(str(e)))
        else:
            control.Set("meter", value, reply_handler=answered, error_handler=lambda e: answered(str(e)))
        state["sent"] += 1

    start = time.monotonic()
    for _ in range(min(32, count)):
        send()
    loop.run()
    took = time.monotonic() - start
    time.sleep(0.3)  # the last to arrive (Set's within 100 ms)
    line = "%d calls answered (%d errors%s) in %.2f s, %.0f/s; " % (
        state["answered"], state["errors"], ": " + state["error"][:120] if state["errors"] else "", took, state["answered"] / took)
    if centrals:
        reached = []
        for central in centrals:
            got, last = standin.Counted(path, central)
            reached.append("%s %s" % (got, "(stalled)" if central in centrals[:stalled] else "last %d" % int.from_bytes(bytes(last), "little")))
        line += "through the sockets: " + ", ".join(reached)
    else:
        notified = sum(1 for line in standin.Calls() if line.startswith("notified " + path)) - notified_before
        line += "%d PropertiesChanged of Value (every subscriber notified of each)" % notified
    print(line)


main()
