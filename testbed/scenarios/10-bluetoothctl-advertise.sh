#!/usr/bin/env bash
# The bed works with a tool we did not write: bluetoothctl advertises a name and a service
# UUID on hci0, and the central on hci1 hears exactly those; after `advertise off`, nothing.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

fifo="$TESTBED_WORK/bluetoothctl.in"
rm -f "$fifo"; mkfifo "$fifo"
bluetoothctl < "$fifo" > "$TESTBED_WORK/bluetoothctl.out" 2>&1 &
exec 3> "$fifo"
say() { echo "$*" >&3; sleep 0.3; }
say "select $(cat /sys/class/bluetooth/hci0/address 2>/dev/null || true)"
say "menu advertise"
say "name Testbed-CTL"
say "uuids 180D"
say "back"
say "advertise on"
wait_for 20 "bluetoothctl to register" 'grep -q "Advertising object registered" "$TESTBED_WORK/bluetoothctl.out"' \
  || { cat "$TESTBED_WORK/bluetoothctl.out"; exit 1; }

echo "while on:"
observe_until 30 "name=Testbed-CTL" "uuids=0000180d-0000-1000-8000-00805f9b34fb"

say "advertise off"
wait_for 10 "bluetoothctl to unregister" 'grep -q "Advertising object unregistered" "$TESTBED_WORK/bluetoothctl.out"'
heard=$(observe 3)
echo "after off:"; echo "${heard:-(nothing)}"
if grep -q "Testbed-CTL" <<< "$heard"; then echo "still heard after advertise off" >&2; exit 1; fi
say "quit"
exec 3>&-
