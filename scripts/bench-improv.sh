#!/usr/bin/env bash
# `make bench-improv`: what a central's flood of Improv frames costs bleadvd, natively: the
# release bleadvd on a private dbus-daemon with BlueZ's stand-in
# (Tests/TestSupport/Peers/bluez_standin.py) playing bluetoothd, COUNT frames of each kind at
# RATE a second (testbed/bench/improv_flood.py): identify frames (the identify program counts
# its starts and runs 2 s), malformed frames, and credentials while Improv waits for an
# authorization. For each: programs started, notifications, journal lines, CPU, RSS.
#   scripts/bench-improv.sh [COUNT] [RATE]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000}
rate=${2:-1000}
work=$(mktemp -d)
trap 'kill $(cat "$work/pids" "$work/bus.pid" 2>/dev/null) 2>/dev/null; rm -rf "$work"' EXIT
. scripts/private-bus.sh
start_private_bus "$work"
address=$bus_address
/usr/bin/python3 Tests/TestSupport/Peers/bluez_standin.py "$address" hci0 > "$work/standin" 2>&1 &
standin=$!
echo $standin >> "$work/pids"
until grep -q '^ready' "$work/standin"; do
  kill -0 "$standin" || { cat "$work/standin"; exit 1; }
  sleep 0.1
done
cat > "$work/identify" <<SH
#!/bin/sh
echo started >> "$work/identified"
sleep 2
SH
chmod +x "$work/identify"
cat > "$work/config.toml" <<CONF
[improv]
join = "/bin/false"
identify = ["$work/identify"]
authorization = "bleadvctl"
device_name = "bench"
CONF
DBUS_SYSTEM_BUS_ADDRESS=$address .build/release/bleadvd --config "$work/config.toml" --state-directory "$work" 2> "$work/log" &
pid=$!
echo $pid >> "$work/pids"
until grep -q '^<5>ready:' "$work/log" 2>/dev/null; do
  kill -0 "$pid" || { cat "$work/log"; exit 1; }
  sleep 0.1
done
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }
echo "bleadvd $(.build/release/bleadvd --version 2>/dev/null || true); $count frames of each kind at $rate/s from one central"
for kind in identify malformed wifi; do
  ticks_before=$(ticks); rss_before=$(rss); lines_before=$(grep -c . "$work/log")
  spawned_before=$(grep -c . "$work/identified" 2>/dev/null || true)
  line=$(/usr/bin/python3 testbed/bench/improv_flood.py "$address" "$kind" "$count" "$rate")
  sleep 2.5  # an identify program started last ends
  echo "$line; programs started $(( $(grep -c . "$work/identified" 2>/dev/null || true) - spawned_before ));" \
    "journal lines $(( $(grep -c . "$work/log") - lines_before )); bleadvd CPU $(( $(ticks) - ticks_before )) ticks (100/s);" \
    "RSS $rss_before -> $(rss) KiB"
done
