#!/usr/bin/env bash
# testbed-timeout: 900
# Scenario 50's crash loop (bluetoothd killed with -9 and started again, ROUNDS times; default
# 20, BLEADVD_REPRO_ROUNDS) with the bus's own record of every round: dbus-monitor --profile
# (every message to or from bleadvd, BlueZ's object and property signals) and btmon's
# management commands for advertising, printed for each round that took more than LIMIT s
# (default 0.6, BLEADVD_REPRO_LIMIT) from hci0's advertising manager answering to both
# registered, as times from the moment bluetoothd took org.bluez again.
#   testbed/run.sh testbed/repro/crash-timeline.sh
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"
export PATH="$TESTBED_BUILD/release:$PATH"  # the release build, as testbed/scenarios/ use

rounds=${BLEADVD_REPRO_ROUNDS:-$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^bleadvd_repro.rounds=//p')}
rounds=${rounds:-20}
limit=${BLEADVD_REPRO_LIMIT:-0.6}
config="$TESTBED_WORK/crash.toml"
cat > "$config" <<'TOML'
[advertisement.first]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "c1a5" }
[advertisement.second]
type = "broadcast"
service_data = { "9999" = "c2a5" }
TOML
fresh_bluetoothd
start_bleadvd "$config" --log-level debug
wait_for 30 "both advertisements on air" '[[ "$(active_instances)" == 2 ]]'

bleadvd=$(dbus-send --system --print-reply=literal --dest=org.freedesktop.DBus /org/freedesktop/DBus \
  org.freedesktop.DBus.GetNameOwner string:org.bleadvd.Advertiser | tr -d ' ')
bus_log=$TESTBED_WORK/timeline-bus.log owners_log=$TESTBED_WORK/timeline-owners.log
dbus-monitor --system --profile "sender='$bleadvd'" "destination='$bleadvd'" \
  "type='signal',interface='org.freedesktop.DBus.ObjectManager'" \
  "type='signal',interface='org.freedesktop.DBus.Properties',path_namespace='/org/bluez'" > "$bus_log" 2>&1 &
monitors=($!)
dbus-monitor --system "type='signal',member='NameOwnerChanged',arg0='org.bluez'" > "$owners_log" 2>&1 &
monitors+=($!)
trap 'kill "${monitors[@]}" 2>/dev/null || true; stop_bleadvd' EXIT
sleep 1

service=()
[[ "${TESTBED_BLUETOOTHD:-hand}" == service ]] && service=(--service)
before=$(bleadvd_log_lines)
python3 "$TESTBED_ROOT/testbed/crashloop.py" --times "$rounds" --expect 2 --log "$TESTBED_WORK/bluetoothd-crashes.log" "${service[@]}" \
  | tee "$TESTBED_WORK/crashes.txt" | sed 's/^/    /' || true
sleep 1
kill "${monitors[@]}" 2>/dev/null || true

# The times bluetoothd took org.bluez (a new owner, not the empty string), one a line.
awk '/member=NameOwnerChanged/ { split($2, t, "="); time = t[2]; n = 0; next }
     /^ *string / { v[n++] = $2; if (n == 3 && v[2] != "\"\"") print time }' "$owners_log" > "$TESTBED_WORK/owned.txt"
btmon -T -r "$TESTBED_WORK/hci.btsnoop" 2>/dev/null \
  | awk '/MGMT (Command|Event): [A-Za-z ]*Advertising|Set Powered|Index Added|Index Removed/ { print }' > "$TESTBED_WORK/mgmt.txt"
sed -nE 's/^crash ([0-9]+): .* registered ([0-9.]+) s later/\1 \2/p' "$TESTBED_WORK/crashes.txt" \
  | while read -r round took; do
      awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t > l) }' || continue
      # Crash N is the Nth time org.bluez was taken since the monitors started.
      t0=$(sed -n "$((round))p" "$TESTBED_WORK/owned.txt")
      [[ -n "$t0" ]] || continue
      t1=$(sed -n "$((round + 1))p" "$TESTBED_WORK/owned.txt")
      t1=${t1:-$(awk -v t="$t0" 'BEGIN { print t + 4 }')}
      echo "---- crash $round: $took s; the bus from bluetoothd taking org.bluez (+s, dbus-monitor --profile)"
      awk -v t0="$t0" -v t1="$t1" '$2 >= t0 && $2 < t1 { printf "    %+.3f %s %s -> %s %s %s %s\n", $2 - t0, $1, $4, $5, $6, $7, $8 }' "$bus_log" \
        | grep -v ' sig .*PropertiesChanged.*/org/bluez/hci[01]/dev_' | head -n 80
      echo "---- crash $round: btmon's management commands (+s)"
      python3 -c '
import re, sys, time
t0, t1 = float(sys.argv[1]), float(sys.argv[2])
day = t0 - t0 % 86400  # btmon -T: the time of day, UTC in the guest
for line in open(sys.argv[3]):
    m = re.search(r"\b(\d\d):(\d\d):(\d\d\.\d+)\b", line)
    if not m: continue
    t = day + int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    if t0 <= t < t1: print("    %+.3f %s" % (t - t0, " ".join(line.split()[:6])))
' "$t0" "$t1" "$TESTBED_WORK/mgmt.txt" | head -n 60
    done
bleadvd_quiet_since "$before" || true
echo "---- bleadvd's log (debug), last 150 lines"
tail -n 150 "$TESTBED_WORK/bleadvd.log"
