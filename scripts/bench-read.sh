#!/usr/bin/env bash
# `make bench-read`: what a central's GATT reads cost bleadvd, natively: the release bleadvd on a
# private dbus-daemon with BlueZ's stand-in (Tests/TestSupport/Peers/bluez_standin.py) making a
# `ReadValue` call for each read, as bluetoothd does for each ATT read (testbed/bench/read_flood.py).
#  1. COUNT reads as fast as they go (32 in flight) of a value held (`held`, as every read was
#     before `read =`) and of one read from a program and served from its last answer
#     (`cached`, max_age 3600 s: one run): bleadvd's CPU time a read (/proc/PID/schedstat).
#  2. A stranger's flood: 1,000 reads a second for SECONDS seconds of one read from a program
#     with max_age 1 s (`fresh`): how many times the program ran, bleadvd's CPU and its
#     children's (the runs, from /proc/PID/stat), journal lines, RSS; and of `held` at the same
#     pace, for comparison (a paced read wakes bleadvd alone, so it costs more than one of a burst).
#   scripts/bench-read.sh [COUNT] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-20000} seconds=${2:-10}
. scripts/private-bus.sh
start_bench_bus
start_bluez_standin "$work"
cat > "$work/temp" <<PROGRAM
#!/bin/sh
echo run >> '$work/runs'
echo 48.25
PROGRAM
chmod 755 "$work/temp"
cat > "$work/config.toml" <<CONF
[service.pi]
uuid = "6e400020-b5a3-f393-e0a9-e50e24dcca9e"

[service.pi.characteristic.held]
uuid = "6e400021-b5a3-f393-e0a9-e50e24dcca9e"
format = "sint16"
exponent = -2
flags = ["read"]
value = 48.25

[service.pi.characteristic.cached]
uuid = "6e400022-b5a3-f393-e0a9-e50e24dcca9e"
format = "sint16"
exponent = -2
flags = ["read"]
read = "$work/temp"
max_age = 3600

[service.pi.characteristic.fresh]
uuid = "6e400023-b5a3-f393-e0a9-e50e24dcca9e"
format = "sint16"
exponent = -2
flags = ["read"]
read = "$work/temp"
max_age = 1

[advertisement.pi-ad]
local_name = "Pi"
services = ["pi"]
CONF
start_release_bleadvd "$work" "$work/config.toml"
# The CPU time of bleadvd's children that it reaped (the programs' runs), in clock ticks.
children_ticks() { awk '{ print $16 + $17 }' "/proc/$bleadvd_pid/stat"; }
runs() { [[ -e "$work/runs" ]] && wc -l < "$work/runs" || echo 0; }
echo "bleadvd $(.build/release/bleadvd --version 2>/dev/null || true); $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1)"
echo "1. $count reads of each as fast as they go, 32 in flight"
for kind in "held 6e400021-b5a3-f393-e0a9-e50e24dcca9e" "cached 6e400022-b5a3-f393-e0a9-e50e24dcca9e"; do
  read -r name uuid <<< "$kind"
  cpu_before=$(bleadvd_cpu_ns); runs_before=$(runs)
  line=$(/usr/bin/python3 testbed/bench/read_flood.py "$bus_address" "$uuid" "$count")
  cpu=$(( $(bleadvd_cpu_ns) - cpu_before ))
  echo "   $name: $line; bleadvd $((cpu / count / 1000)).$(( (cpu / count / 100) % 10 )) µs of CPU a read; program runs $(( $(runs) - runs_before ))"
done
total=$(( seconds * 1000 ))
echo "2. a stranger's flood: $total reads at 1,000 a second of fresh (max_age 1 s), and of held beside it"
cpu_before=$(bleadvd_cpu_ns)
line=$(/usr/bin/python3 testbed/bench/read_flood.py "$bus_address" 6e400021-b5a3-f393-e0a9-e50e24dcca9e "$total" 32 1000)
cpu=$(( $(bleadvd_cpu_ns) - cpu_before ))
echo "   held: $line; bleadvd $((cpu / 1000000)) ms of CPU ($((cpu / total / 1000)).$(( (cpu / total / 100) % 10 )) µs a read)"
cpu_before=$(bleadvd_cpu_ns); children_before=$(children_ticks); rss_before=$(bleadvd_rss); lines_before=$(bleadvd_lines); runs_before=$(runs)
line=$(/usr/bin/python3 testbed/bench/read_flood.py "$bus_address" 6e400023-b5a3-f393-e0a9-e50e24dcca9e "$total" 32 1000)
cpu=$(( $(bleadvd_cpu_ns) - cpu_before )); children=$(( ($(children_ticks) - children_before) * 1000 / $(getconf CLK_TCK) ))
echo "   fresh: $line; program runs $(( $(runs) - runs_before )) (at most one per max_age: $((seconds + 1)));" \
  "bleadvd $((cpu / 1000000)) ms of CPU ($((cpu / total / 1000)).$(( (cpu / total / 100) % 10 )) µs a read), its programs' $children ms;" \
  "journal lines $(( $(bleadvd_lines) - lines_before )); RSS $rss_before -> $(bleadvd_rss) KiB"
