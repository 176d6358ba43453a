#!/usr/bin/env bash
# `make bench-improv`: what a central's flood of Improv frames costs bleadvd, natively: the
# release bleadvd on a private dbus-daemon with BlueZ's stand-in
# (Tests/TestSupport/Peers/bluez_standin.py) playing bluetoothd and NetworkManager's
# (Tests/TestSupport/Peers/networkmanager_standin.py: five access points, a scan refused as user
# bleadvd is refused it), COUNT frames of each kind at RATE a second
# (testbed/bench/improv_flood.py): identify frames (the identify program counts its starts and
# runs 2 s), scan frames, malformed frames, and credentials while Improv waits for an
# authorization. For each: programs started, NetworkManager calls, notifications, journal
# lines, CPU, RSS.
#   scripts/bench-improv.sh [COUNT] [RATE]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-1000}
rate=${2:-1000}
. scripts/private-bus.sh
start_bench_bus
start_bluez_standin "$work"
start_networkmanager_standin "$work"
# NetworkManager's calls so far, all members summed.
nm_calls() {
  DBUS_SYSTEM_BUS_ADDRESS=$bus_address busctl --system call org.freedesktop.NetworkManager /test test.StandIn Calls \
    | awk '{ for (i = 4; i <= NF; i += 2) sum += $i } END { print sum + 0 }'
}
cat > "$work/identify" <<SH
#!/bin/sh
echo started >> "$work/identified"
sleep 2
SH
chmod +x "$work/identify"
cat > "$work/config.toml" <<CONF
[improv]
identify = ["$work/identify"]
authorization = "bleadvctl"
device_name = "bench"
CONF
start_release_bleadvd "$work" "$work/config.toml"
echo "bleadvd $(.build/release/bleadvd --version 2>/dev/null || true); $count frames of each kind at $rate/s from one central"
for kind in identify scan malformed wifi; do
  cpu_before=$(bleadvd_cpu_ns); rss_before=$(bleadvd_rss); lines_before=$(bleadvd_lines); nm_before=$(nm_calls)
  spawned_before=$(grep -c . "$work/identified" 2>/dev/null || true)
  line=$(/usr/bin/python3 testbed/bench/improv_flood.py "$bus_address" "$kind" "$count" "$rate")
  sleep 2.5  # an identify program started last ends
  echo "$line; programs started $(( $(grep -c . "$work/identified" 2>/dev/null || true) - spawned_before ));" \
    "NetworkManager calls $(( $(nm_calls) - nm_before )); journal lines $(( $(bleadvd_lines) - lines_before ));" \
    "bleadvd CPU $(( ($(bleadvd_cpu_ns) - cpu_before) / 1000000 )) ms; RSS $rss_before -> $(bleadvd_rss) KiB"
done
