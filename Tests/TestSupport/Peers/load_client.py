#!/usr/bin/python3
"""One client of the load test, with dbus-python: toggles an advertisement on and off, or asks
for Status, as fast as the bus takes it.

  load_client.py BUS_ADDRESS toggle NAME COUNT LAST    (LAST: on or off, the final command)
  load_client.py BUS_ADDRESS status COUNT

Prints "done N" with N the calls answered without an error; errors are printed one a line.
"""
import sys

import dbus


def main():
    bus = dbus.bus.BusConnection(sys.argv[1])
    advertiser = dbus.Interface(bus.get_object("org.bleadvd.Advertiser", "/org/bleadvd/Advertiser"),
                                "org.bleadvd.Advertiser1")
    answered = 0
    if sys.argv[2] == "toggle":
        name, count, last = sys.argv[3], int(sys.argv[4]), sys.argv[5]
        # The last command is LAST; before it they alternate.
        commands = [("On" if (count - 1 - i) % 2 == 0 else "Off") if last == "on" else
                    ("Off" if (count - 1 - i) % 2 == 0 else "On") for i in range(count)]
        for command in commands:
            try:
                getattr(advertiser, command)([name], timeout=30)
                answered += 1
            except dbus.DBusException as error:
                print("%s %s: %s" % (command, name, error.get_dbus_message()))
    else:
        for _ in range(int(sys.argv[3])):
            try:
                advertiser.Status(timeout=30)
                answered += 1
            except dbus.DBusException as error:
                print("Status: %s" % error.get_dbus_message())
    print("done %d" % answered)


if __name__ == "__main__":
    main()
