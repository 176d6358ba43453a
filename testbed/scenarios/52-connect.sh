#!/usr/bin/env bash
# A central connects to a connectable advertisement and disconnects (a known pain with BlueZ
# and the kernel: advertising stops with a connection): afterwards hci1 hears it again, with
# its values, and bleadvd still says it is on.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

config="$TESTBED_WORK/connect.toml"
cp "$TESTBED_ROOT/testbed/configs/52-connect.toml" "$config"
fresh_bluetoothd
start_bleadvd "$config"
address=$(adapter_address)
device="/org/bluez/hci1/dev_${address//:/_}"
echo "before the connection, hci1 hears it:"
observe_until 30 "device $address" "service_data=0000fcd2" | sed 's/^/    /'

echo "hci1 connects to $address, stays 3 s, disconnects:"
connected_at=$(date +%s.%N)
dbus-send --system --print-reply --dest=org.bluez "$device" org.bluez.Device1.Connect > /dev/null
wait_for 20 "the connection" '[[ "$(busctl get-property org.bluez "$device" org.bluez.Device1 Connected)" == "b true" ]]'
echo "    connected after $(elapsed "$connected_at") s; bleadvctl status says:"
bleadvctl status | sed 's/^/        /'
sleep 3
dbus-send --system --print-reply --dest=org.bluez "$device" org.bluez.Device1.Disconnect > /dev/null
wait_for 20 "the disconnection" '[[ "$(busctl get-property org.bluez "$device" org.bluez.Device1 Connected)" == "b false" ]]'
disconnected_at=$(date +%s.%N)
echo "after the disconnection:"
if observe_until 30 "device $address" "service_data=0000fcd2" | sed 's/^/    /'; then
  echo "    heard again $(elapsed "$disconnected_at") s after the disconnection"
else
  echo "not heard within 30 s of the disconnection" >&2
  bleadvctl status >&2
  exit 1
fi
bleadvctl status | sed 's/^/    /'
# From the HCI capture: when hci0's controller was told to advertise again after the link went.
btmon -r "$TESTBED_WORK/hci.btsnoop" 2>/dev/null | awk '
  /^[<>@=] / { hci0 = /\[hci0\]/; if (hci0) time = $NF }
  hci0 && /Disconnect(ion)? Complete/ { gone = time; next }
  hci0 && gone && /(Extended advertising|Advertising): Enabled/ {
    printf "    hci0 advertising enabled again %.0f ms after the disconnection (HCI capture)\n", (time - gone) * 1000; found = 1; exit }
  END { if (!found) print "    no advertising enable on hci0 after the disconnection in the HCI capture" }' || true
stop_bleadvd
