#!/usr/bin/env python3
"""kill -9 bluetoothd and start it again, TIMES times in a row, as a crash and systemd's
restart would (or stop it cleanly with --signal TERM: it sends Release first); after each, how
long until hci0's LEAdvertisingManager1 answers again and how long after that ActiveInstances
is back to EXPECT.

  crashloop.py --times 20 --expect 2 [--signal KILL|TERM] [--pause 0.3] [--timeout 15] [--log FILE]

One line per crash: "crash 3: manager back 0.81 s after the start, 2 registered 0.42 s later".
Exits 1 at the first crash after which ActiveInstances does not reach EXPECT within TIMEOUT s.
Polls every 10 ms (its figures are that coarse). Runs inside the test bed's VM.
"""
import argparse
import subprocess
import sys
import time

import dbus

MANAGER = "org.bluez.LEAdvertisingManager1"


def active_instances(bus):
    """ActiveInstances of hci0, or None while bluetoothd or its advertising manager is not there."""
    try:
        adapter = bus.get_object("org.bluez", "/org/bluez/hci0", introspect=False)
        return int(adapter.Get(MANAGER, "ActiveInstances", dbus_interface=dbus.PROPERTIES_IFACE, timeout=1))
    except dbus.exceptions.DBusException:
        return None


def wait(condition, timeout):
    """Polls condition() every 10 ms; the time it became true, or None at the timeout."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return time.monotonic()
        time.sleep(0.01)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=20)
    parser.add_argument("--expect", type=int, required=True)
    parser.add_argument("--signal", default="KILL", choices=["KILL", "TERM"])
    parser.add_argument("--pause", type=float, default=0.3, help="seconds between the kill and the start")
    parser.add_argument("--timeout", type=float, default=15)
    parser.add_argument("--log", default="/dev/null", help="bluetoothd's output is appended here")
    parser.add_argument("--service", action="store_true",
                        help="start the distribution's bluetooth.service, not bluetoothd -n -E by hand")
    args = parser.parse_args()
    bus = dbus.SystemBus()
    bus_daemon = bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
    log = open(args.log, "ab")
    for crash in range(1, args.times + 1):
        subprocess.run(["pkill", "-" + args.signal, "-x", "bluetoothd"], check=False)
        if wait(lambda: not bus_daemon.NameHasOwner("org.bluez", dbus_interface="org.freedesktop.DBus"), 10) is None:
            print("crash %d: org.bluez still owned 10 s after SIG%s" % (crash, args.signal))
            return 1
        time.sleep(args.pause)
        log.write(b"---- crash %d\n" % crash)
        log.flush()
        started = time.monotonic()
        if args.service:
            # reset-failed: twenty starts in a row would hit systemd's start limit.
            subprocess.run(["systemctl", "reset-failed", "bluetooth.service"], check=False)
            subprocess.run(["systemctl", "start", "--no-block", "bluetooth.service"], check=True)
        else:
            subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n", "-E"], stdout=log, stderr=log)
        back = wait(lambda: active_instances(bus) is not None, args.timeout)
        if back is None:
            print("crash %d: LEAdvertisingManager1 not back within %.0f s" % (crash, args.timeout))
            return 1
        registered = wait(lambda: active_instances(bus) == args.expect, args.timeout)
        if registered is None:
            print("crash %d: manager back %.2f s after the start, but ActiveInstances is %s, not %d, %.0f s later"
                  % (crash, back - started, active_instances(bus), args.expect, args.timeout))
            return 1
        print("crash %d: manager back %.2f s after the start, %d registered %.2f s later"
              % (crash, back - started, args.expect, registered - back), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
