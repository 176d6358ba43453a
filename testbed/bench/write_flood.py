#!/usr/bin/python3
"""A central's writes to one characteristic as fast as they go, as bluetoothd passes them to
bleadvd: COUNT writes of VALUE (hex) to the characteristic with UUID, each a `WriteValue` call
from BlueZ's stand-in's connection (its `WriteCharacteristic`, as bluetoothd makes one for each
ATT write), WINDOW of them in flight at a time. Prints one line: writes answered, errors, the
wall time and the rate.

  write_flood.py ADDRESS UUID VALUE COUNT [WINDOW]"""
import sys
import time

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib


def main():
    address, uuid, value, count = sys.argv[1], sys.argv[2].lower(), bytes.fromhex(sys.argv[3]), int(sys.argv[4])
    window = int(sys.argv[5]) if len(sys.argv) > 5 else 32
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    standin = dbus.Interface(bus.get_object("org.bluez", "/test"), "test.StandIn")
    path = next(p for p, interfaces in standin.GattObjects().items()
                if str(interfaces.get("org.bluez.GattCharacteristic1", {}).get("UUID", "")).lower() == uuid)
    payload = dbus.Array(value, signature="y")
    loop = GLib.MainLoop()
    state = {"sent": 0, "answered": 0, "errors": 0}

    def answered(error):
        state["answered"] += 1
        if error:
            state["errors"] += 1
        if state["answered"] == count:
            loop.quit()
        elif state["sent"] < count:
            send()

    def send():
        state["sent"] += 1
        standin.WriteCharacteristic(path, payload, reply_handler=answered, error_handler=lambda e: answered(str(e)))

    start = time.monotonic()
    for _ in range(min(window, count)):
        send()
    loop.run()
    took = time.monotonic() - start
    print(f"{state['answered']} writes answered ({state['errors']} errors) in {took:.2f} s, {state['answered'] / took:.0f}/s")


main()
