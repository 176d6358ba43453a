#!/usr/bin/env bash
# GATT behind the advertisement, seen by centrals we did not write, on hci1:
# - bleak (PyPI) finds the services by UUID, reads the battery level and a custom value,
#   subscribes and is notified after each `bleadvctl set` (timed), writes a value that
#   `bleadvctl watch` prints, and gets an ATT error for a write of the wrong length;
# - a reload of the same file keeps the tables: a fresh discovery (hci1's cache dropped) finds
#   the same handles, and the application is the one registered before;
# - BlueZ's battery plugin: org.bluez.Battery1.Percentage of the device is the configured
#   level, and follows a set;
# - after kill -9 of bluetoothd, the services and the advertisement are back, and a new bleak
#   connection reads the values in force.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

config="$TESTBED_WORK/gatt.toml"
cp "$TESTBED_ROOT/testbed/configs/58-gatt.toml" "$config"
battery=00002a19-0000-1000-8000-00805f9b34fb
brightness=6e400002-b5a3-f393-e0a9-e50e24dcca9e
label=6e400003-b5a3-f393-e0a9-e50e24dcca9e
hex() { printf %s "$1" | od -An -tx1 | tr -d " \n"; }
# central ARGS...: testbed/gatt_central.py (bleak) on hci1, against the device hci1 has heard.
central() {
  "$(decoders_python)" "$TESTBED_ROOT/testbed/gatt_central.py" "$address" "$@"
}

fresh_bluetoothd
# The RSS of the same advertisement without services, for comparison.
cp "$TESTBED_ROOT/testbed/configs/58-plain.toml" "$TESTBED_WORK/plain.toml"
start_bleadvd "$TESTBED_WORK/plain.toml"
plain_rss=$(ps -o rss= -p "$BLEADVD_PID")
stop_bleadvd
start_bleadvd "$config"
address=$(adapter_address)
device="/org/bluez/hci1/dev_${address//:/_}"
bleadvctl status | sed 's/^/    /'
# Each line with the time it was printed, to time a write from the central to the line.
bleadvctl watch | while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done > "$TESTBED_WORK/watch.out" &
echo "hci1 hears the advertisement offering the battery service:"
observe_until 30 "device $address" "0000180f-0000-1000-8000-00805f9b34fb" | sed 's/^/    /'

echo "bleak on hci1: services, reads, notifications after bleadvctl set, writes:"
central --services --read "$battery=50" --read "$brightness=0a" --read "$label=$(hex desk)" --description "$brightness=brightness" \
  --notify "$battery" --set "bleadvctl set power level={}" --values 71,72,73,74,75,76,77,78,79,70 \
  --write "$brightness=2a" --write "$label=$(hex kitchen)" --refused "$brightness=2a00" \
  | tee "$TESTBED_WORK/central.out" | sed 's/^/    /'
expect_line "service 0000180f-0000-1000-8000-00805f9b34fb: $battery [notify,read]" "$(cat "$TESTBED_WORK/central.out")"
expect_line "service 6e400001-b5a3-f393-e0a9-e50e24dcca9e:" "$(cat "$TESTBED_WORK/central.out")"
expect_line "Invalid Attribute Value Length" "$(cat "$TESTBED_WORK/central.out")"

wait_for 5 "bleadvctl watch to print the writes" "grep -q ' written lamp label' '$TESTBED_WORK/watch.out'"
echo "bleadvctl watch printed:"
cut -d' ' -f2- "$TESTBED_WORK/watch.out" | sed 's/^/    /'
expect_line "written lamp brightness 42 " "$(cat "$TESTBED_WORK/watch.out")"
expect_line 'written lamp label "kitchen" ' "$(cat "$TESTBED_WORK/watch.out")"
written_at=$(sed -nE "s/^write $brightness 2a: taken at ([0-9.]+)$/\1/p" "$TESTBED_WORK/central.out")
printed_at=$(awk '/ written lamp brightness 42 / { print $1; exit }' "$TESTBED_WORK/watch.out")
echo "    the write's line printed $(awk -v a="$written_at" -v b="$printed_at" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms after bleak's write returned"
if grep -q 'brightness 10752\|2a00' "$TESTBED_WORK/watch.out"; then fail "the refused write reached watch"; fi
status=$(bleadvctl status --json)
grep -q '"brightness": "42"' <<< "$status" || fail "status does not show the written brightness: $status"

echo "a reload of the same file keeps the GATT tables: a fresh discovery finds the same handles"
lamp_id() { bleadvctl status --json | grep -o '"lamp": {[^}]*}' | grep -o '"id": "[^"]*"'; }
central --handles > "$TESTBED_WORK/handles-before.out" 2>&1 \
  || fail "bleak's discovery of the handles failed: $(tail -n 15 "$TESTBED_WORK/handles-before.out")"
id_before=$(lamp_id)
[[ -n "$id_before" ]] || fail "status gives the lamp no registration id: $(bleadvctl status --json)"
bleadvctl reload
# hci1's bluetoothd forgets the device and the tables it cached: the next discovery reads
# bleadvd's own.
dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci1 org.bluez.Adapter1.RemoveDevice "objpath:$device" > /dev/null
observe_until 30 "device $address" "0000180f-0000-1000-8000-00805f9b34fb" > /dev/null
central --handles > "$TESTBED_WORK/handles-after.out" 2>&1 \
  || fail "bleak's discovery of the handles after the reload failed: $(tail -n 15 "$TESTBED_WORK/handles-after.out")"
# In handle order: bleak lists what it discovered in an order of its own.
grep '^handle' "$TESTBED_WORK/handles-before.out" | sort | sed 's/^/    /'
[[ $(grep -c '^handle' "$TESTBED_WORK/handles-before.out") -ge 8 ]] || fail "the discovery found too few attributes: $(cat "$TESTBED_WORK/handles-before.out")"
diff <(grep '^handle' "$TESTBED_WORK/handles-before.out" | sort) <(grep '^handle' "$TESTBED_WORK/handles-after.out" | sort) \
  || fail "a reload of the same file moved the handles a central discovers"
[[ "$(lamp_id)" == "$id_before" ]] || fail "a reload of the same file registered the services anew: $id_before, then $(lamp_id)"
echo "    the same after the reload; the application is still $id_before"

echo "BlueZ's battery plugin on hci1 (Device1.Connect):"
dbus-send --system --print-reply --dest=org.bluez "$device" org.bluez.Device1.Connect > /dev/null
wait_for 20 "org.bluez.Battery1 on $device" "busctl get-property org.bluez '$device' org.bluez.Battery1 Percentage > /dev/null 2>&1"
percentage() { busctl get-property org.bluez "$device" org.bluez.Battery1 Percentage | awk '{print $2}'; }
echo "    Percentage $(percentage) (bleadvd's level: 70)"
[[ "$(percentage)" == 70 ]] || fail "Battery1.Percentage is $(percentage), not 70"
set_at=$(date +%s.%N)
bleadvctl set power level=55
wait_for 10 "Percentage to follow the set to 55" '[[ "$(percentage)" == 55 ]]'
echo "    Percentage 55 $(elapsed "$set_at") s after bleadvctl set power level=55"
# What one set costs on the bus with a subscribed central (the battery plugin): every message
# to or from bleadvd, seen by a bus monitor.
owner=$(bus_owner org.bleadvd.Advertiser)
timeout 4 dbus-monitor --system "sender='$owner'" "destination='$owner'" > "$TESTBED_WORK/monitor.out" 2>&1 &
monitor=$!
sleep 1
bleadvctl set power level=56
wait_for 10 "Percentage to follow the set to 56" '[[ "$(percentage)" == 56 ]]'
wait "$monitor" || true
messages=$(grep -E '^(method call|method return|signal|error) ' "$TESTBED_WORK/monitor.out" | grep -v 'member=NameAcquired\|member=NameLost' || true)
echo "    one set with a subscribed central: $(grep -c . <<< "$messages") message(s) to or from bleadvd:"
sed -E 's/^(method call|method return|signal|error) time=[0-9.]+ /\1 /; s/ serial=[0-9]+//' <<< "$messages" | sed 's/^/        /'
echo "    bleadvd's RSS with the services registered: $(ps -o rss= -p "$BLEADVD_PID") KiB (the advertisement alone:$plain_rss KiB)"
dbus-send --system --print-reply --dest=org.bluez "$device" org.bluez.Device1.Disconnect > /dev/null || true

echo "kill -9 bluetoothd and start it again:"
restart_bluetoothd
wait_for 60 "the services and the advertisement to be back" \
  '[[ $(bleadvctl status --json | grep -c "\"state\": \"on\"") == 3 ]]' || { bleadvctl status; exit 1; }
bleadvctl status | sed 's/^/    /'
observe_until 30 "device $address" "0000180f-0000-1000-8000-00805f9b34fb" | sed 's/^/    /'
echo "a new bleak connection reads the values in force:"
central --read "$battery=38" --read "$brightness=2a" --read "$label=$(hex kitchen)" | sed 's/^/    /'
pkill -f "bleadvctl watch" || true
grep -E 'GATT|wrote|refused a write' "$TESTBED_WORK/bleadvd.log" | sed 's/^/    log: /' | head -20
stop_bleadvd
