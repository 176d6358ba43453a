#!/usr/bin/python3
"""A central's flood of Improv command frames, as bluetoothd passes them to bleadvd: COUNT
frames of KIND written to Improv's RPC command characteristic through BlueZ's stand-in
(`WriteCharacteristic`, a `WriteValue` call from the stand-in's connection, as bluetoothd's),
RATE a second, each waiting for no reply. Counts the notifications bleadvd sends for Improv's
characteristics meanwhile (PropertiesChanged to the stand-in, seen by eavesdropping).

  improv_flood.py ADDRESS KIND COUNT RATE

KIND: identify (02 00 02), scan (04 00 04: the Wi-Fi networks in range), malformed (a bad
checksum), wifi (credentials; refused while Improv waits for an authorization). Prints one line: frames sent, the rate reached, the writes
bleadvd answered, the notifications."""
import sys
import time

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

COMMAND_UUID = "00467768-6228-2272-4663-277478268003"
CONTROL = "test.StandIn"


def frame(command, data):
    head = [command, len(data)] + data
    return head + [sum(head) & 0xFF]


FRAMES = {
    "identify": frame(0x02, []),
    "scan": frame(0x04, []),
    "malformed": [0x02, 0x00, 0x00],
    "wifi": frame(0x01, [4] + list(b"Home") + [8] + list(b"hunter22")),
}


def main():
    address, kind, count, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    standin = dbus.Interface(bus.get_object("org.bluez", "/test"), CONTROL)
    objects = standin.GattObjects()
    path = next(p for p, interfaces in objects.items()
                if str(interfaces.get("org.bluez.GattCharacteristic1", {}).get("UUID", "")).lower() == COMMAND_UUID)
    improv_paths = {p for p in objects if p.startswith(path.rsplit("/", 1)[0])}
    monitor = dbus.bus.BusConnection(address)
    notified = [0]

    def changed(*_, **where):
        if where["path"] in improv_paths:
            notified[0] += 1

    monitor.add_match_string("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',eavesdrop='true'")
    monitor.add_signal_receiver(changed, signal_name="PropertiesChanged", dbus_interface="org.freedesktop.DBus.Properties",
                                path_keyword="path")
    loop = GLib.MainLoop()
    state = {"sent": 0, "answered": 0}
    value = dbus.Array(FRAMES[kind], signature="y")
    start = time.monotonic()

    def answered(_):
        state["answered"] += 1
        if state["answered"] == count:
            GLib.timeout_add(1000, loop.quit)  # the last notifications

    def send():
        # Catch up with the schedule: RATE a second from the start.
        due = min(count, int((time.monotonic() - start) * rate) + 1)
        while state["sent"] < due:
            standin.WriteCharacteristic(path, value, reply_handler=answered, error_handler=lambda e: answered(None))
            state["sent"] += 1
        if state["sent"] < count:
            return True
        state["took"] = time.monotonic() - start
        return False

    GLib.timeout_add(1, send)
    GLib.timeout_add(count / rate * 1000 + 30_000, loop.quit)
    loop.run()
    took = state.get("took", time.monotonic() - start)
    print(f"{kind}: {state['sent']} frames in {took:.1f} s ({state['sent'] / took:.0f}/s), "
          f"{state['answered']} answered, {notified[0]} notification(s)")


main()
