#!/usr/bin/python3
"""A central's reads of one characteristic, as bluetoothd passes them to bleadvd: COUNT reads of
the characteristic with UUID, each a `ReadValue` call from BlueZ's stand-in's connection (its
`ReadCharacteristic`, as bluetoothd makes one for each ATT read), WINDOW of them in flight at a
time, as fast as they go or, with RATE, RATE a second (a central's flood over its connection
interval). Prints one line: reads answered, errors, the wall time and the rate.

  read_flood.py ADDRESS UUID COUNT [WINDOW] [RATE]"""
import sys
import time

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib


def main():
    address, uuid, count = sys.argv[1], sys.argv[2].lower(), int(sys.argv[3])
    window = int(sys.argv[4]) if len(sys.argv) > 4 else 32
    rate = float(sys.argv[5]) if len(sys.argv) > 5 else None
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    standin = dbus.Interface(bus.get_object("org.bluez", "/test"), "test.StandIn")
    path = next(p for p, interfaces in standin.GattObjects().items()
                if str(interfaces.get("org.bluez.GattCharacteristic1", {}).get("UUID", "")).lower() == uuid)
    loop = GLib.MainLoop()
    state = {"sent": 0, "answered": 0, "errors": 0, "in flight": 0}
    start = time.monotonic()

    def due():
        """How many reads may have been sent by now."""
        return count if rate is None else min(count, int((time.monotonic() - start) * rate) + 1)

    def answered(error):
        state["answered"] += 1
        state["in flight"] -= 1
        if error:
            state["errors"] += 1
        if state["answered"] == count:
            loop.quit()
        else:
            send()

    def send():
        while state["sent"] < due() and state["in flight"] < window:
            state["sent"] += 1
            state["in flight"] += 1
            standin.ReadCharacteristic(path, dbus.UInt16(0), reply_handler=lambda value: answered(None),
                                       error_handler=lambda e: answered(str(e)))
        return state["sent"] < count

    send()
    if rate is not None:
        GLib.timeout_add(5, send)
    loop.run()
    took = time.monotonic() - start
    print(f"{state['answered']} reads answered ({state['errors']} errors) in {took:.2f} s, {state['answered'] / took:.0f}/s")


main()
