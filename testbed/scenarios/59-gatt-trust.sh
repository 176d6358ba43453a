#!/usr/bin/env bash
# GATT that can be trusted, as a central we did not write (bleak, through BlueZ on hci1), the
# bus and the journal see it:
# - a write-only secret: the central's write is taken, and the secret is in no signal on the
#   system bus (a monitor of every signal; after kill -9 of bluetoothd too, when the services
#   are exported again with the values in force), not in the log, `bleadvctl watch` or status;
# - a local process (root, busctl) calling WriteValue on bleadvd's characteristics with the
#   real bluetoothd in place: each refused, nothing announced;
# - 1,000 writes without response as fast as the central can send them: the Written signals
#   and journal lines it costs, bleadvd's CPU and RSS, and the last value in force.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

config="$TESTBED_WORK/trust.toml"
cp "$TESTBED_ROOT/testbed/configs/59-trust.toml" "$config"
dimmer=6e400005-b5a3-f393-e0a9-e50e24dcca9e
pin=6e400006-b5a3-f393-e0a9-e50e24dcca9e
secret_hex=68756e74657232  # "hunter2"
central() {
  "$(decoders_python)" "$TESTBED_ROOT/testbed/gatt_central.py" "$address" "$@"
}
# ticks PID: the process's user and system CPU time so far, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

fresh_bluetoothd
start_bleadvd "$config"
address=$(adapter_address)
bleadvctl watch > "$TESTBED_WORK/watch.out" &
watch_pid=$!
# Every signal on the system bus while the central works: a secret must be in none.
dbus-monitor --system "type='signal'" > "$TESTBED_WORK/signals.out" 2>&1 &
monitor_pid=$!
observe_until 30 "device $address" "0000180f-0000-1000-8000-00805f9b34fb" > /dev/null

rss_before=$(ps -o rss= -p "$BLEADVD_PID" | tr -d ' ')
bluetoothd_pid=$(pidof bluetoothd | awk '{print $1}')
ticks_before=$(ticks "$BLEADVD_PID")
bluetoothd_before=$(ticks "$bluetoothd_pid")
lines_before=$(grep -c . "$TESTBED_WORK/bleadvd.log")
echo "bleak on hci1: the secret, then 1,000 writes without response:"
central --write "$pin=$secret_hex" --flood "$dimmer" --count 1000 \
  | tee "$TESTBED_WORK/central.out" | sed 's/^/    /'
wait_for 10 "the last of the flood in force" \
  'bleadvctl status --json | grep -q "\"dimmer\": \"232\""' || { bleadvctl status --json; exit 1; }
sleep 0.5  # the flood's last announcement comes within 100 ms of its last write
ticks_after=$(ticks "$BLEADVD_PID")
bluetoothd_after=$(ticks "$bluetoothd_pid")
rss_after=$(ps -o rss= -p "$BLEADVD_PID" | tr -d ' ')
flood_seconds=$(sed -nE 's/^flood .* in ([0-9.]+) s .*/\1/p' "$TESTBED_WORK/central.out")

echo "a local process (root) calls WriteValue on every characteristic bleadvd exports:"
owner=$(bus_owner org.bleadvd.Advertiser)
refused=0
for path in $(busctl --system tree --list "$owner" | grep -E '/char[0-9]+$'); do
  if out=$(busctl --system call "$owner" "$path" org.bluez.GattCharacteristic1 WriteValue 'aya{sv}' 6 70 79 82 71 69 68 0 2>&1); then
    fail "a forged WriteValue on $path was taken: $out"
  fi
  grep -q "Access denied" <<< "$out" || fail "a forged WriteValue on $path: $out"
  refused=$((refused + 1))
done
echo "    $refused forged WriteValue call(s), each: Access denied"
[[ $refused -ge 3 ]] || fail "found $refused characteristics to forge a write on"
echo "kill -9 bluetoothd: the services are registered again, with the values in force:"
restart_bluetoothd
wait_for 60 "the services and the advertisement to be back" \
  '[[ $(bleadvctl status --json | grep -c "\"state\": \"on\"") == 3 ]]' || { bleadvctl status; exit 1; }
grep -c "member=InterfacesAdded" "$TESTBED_WORK/signals.out" | sed 's/^/    InterfacesAdded signals so far: /'
sleep 0.3
kill "$monitor_pid" "$watch_pid" 2>/dev/null || true

echo "what the bus, the log, watch and status show of the secret:"
for place in signals.out bleadvd.log watch.out; do
  if grep -qiE "hunter2|68 75 6e 74 65 72 32" "$TESTBED_WORK/$place"; then
    # The message that carried it: its header line, and the lines up to the secret.
    awk '/^(signal|method call|method return|error) / { header = $0; n = 0 } { if (n++ < 40) buf[n] = $0 }
         /hunter2|68 75 6e 74 65 72 32/ { print header; for (i = 1; i <= n; i++) if (buf[i] ~ /string "org.bluez|string "Value"|hunter2/) print buf[i]; exit }' \
      "$TESTBED_WORK/$place" | head -n 20 | sed 's/^/    /'
    fail "the secret is in $place"
  fi
done
if bleadvctl status --json | grep -q hunter2; then fail "the secret is in status"; fi
expect_line "written lamp pin " "$(cat "$TESTBED_WORK/watch.out")"
grep -E "lamp.pin" "$TESTBED_WORK/bleadvd.log" | sed 's/^/    log: /'
echo "    the secret: in none of $(grep -c '^signal' "$TESTBED_WORK/signals.out") signals, the log, watch or status"
# "FORGED" as bytes: a forged write taken would show in watch (hex) or, for the secret, in the log.
if grep -qi "464f52474544" "$TESTBED_WORK/watch.out" || grep -q "wrote a secret (6 bytes" "$TESTBED_WORK/bleadvd.log"; then
  fail "a forged write was taken"
fi

written=$(grep -c "^written lamp dimmer" "$TESTBED_WORK/watch.out" || true)
logged=$(tail -n +"$((lines_before + 1))" "$TESTBED_WORK/bleadvd.log" | grep -c "lamp.dimmer: .* wrote" || true)
allowed=$(awk -v s="$flood_seconds" 'BEGIN { printf "%d", s / 0.1 + 3 }')
echo "the flood: 1,000 writes in ${flood_seconds} s cost $written Written signal(s) (watch) and $logged journal line(s)" \
  "(at most $allowed: one per 100 ms); CPU ticks ($(getconf CLK_TCK)/s) bleadvd $((ticks_after - ticks_before)), bluetoothd (both" \
  "sides of the link) $((bluetoothd_after - bluetoothd_before));" \
  "RSS ${rss_before} -> ${rss_after} KiB"
grep "lamp.dimmer: .* wrote" "$TESTBED_WORK/bleadvd.log" | tail -n 2 | sed 's/^/    log: /'
[[ $written -ge 1 && $written -le $allowed ]] || fail "$written Written signals for the flood"
[[ $logged -ge 1 && $logged -le $allowed ]] || fail "$logged journal lines for the flood"
stop_bleadvd
