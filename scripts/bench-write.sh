#!/usr/bin/env bash
# `make bench-write`: what a central's GATT writes cost bleadvd, natively: the release bleadvd
# on a private dbus-daemon with BlueZ's stand-in (Tests/TestSupport/Peers/bluez_standin.py)
# making a `WriteValue` call for each write, as bluetoothd does for each ATT write, COUNT writes
# as fast as they go (testbed/bench/write_flood.py, 32 in flight), to a characteristic with a
# response (write) and one without (write-without-response). For each: bleadvd's CPU time per
# write (from /proc/PID/schedstat, nanoseconds), the writes one core of it could take a second,
# journal lines, RSS. (bluetoothd's own share, under emulation: scenario 65 step 5.)
#   scripts/bench-write.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-20000}
. scripts/private-bus.sh
start_bench_bus
start_bluez_standin "$work"
cat > "$work/config.toml" <<CONF
[service.lamp]
uuid = "6e400001-b5a3-f393-e0a9-e50e24dcca9e"

[service.lamp.characteristic.state]
uuid = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
format = "utf8"
flags = ["read", "write"]
security = "none"                # the stand-in's central is bonded in no pairing window
value = "off"

[service.lamp.characteristic.dimmer]
uuid = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"
format = "uint8"
flags = ["read", "write-without-response"]
security = "none"
value = 0

[advertisement.lamp-ad]
local_name = "Lamp"
services = ["lamp"]
CONF
start_release_bleadvd "$work" "$work/config.toml"
echo "bleadvd $(.build/release/bleadvd --version 2>/dev/null || true); $count writes of each kind from one central, 32 in flight; $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1)"
for kind in "state 6e400002-b5a3-f393-e0a9-e50e24dcca9e 6f6e" "dimmer 6e400003-b5a3-f393-e0a9-e50e24dcca9e 2a"; do
  read -r name uuid value <<< "$kind"
  sleep 0.5  # the last announcement of the kind before
  cpu_before=$(bleadvd_cpu_ns); rss_before=$(bleadvd_rss); lines_before=$(bleadvd_lines)
  line=$(/usr/bin/python3 testbed/bench/write_flood.py "$bus_address" "$uuid" "$value" "$count")
  sleep 0.2  # the last announcement (within 100 ms)
  cpu=$(( $(bleadvd_cpu_ns) - cpu_before ))
  echo "$name: $line; bleadvd $((cpu / count / 1000)).$(( (cpu / count / 100) % 10 )) µs of CPU a write ($((count * 1000000000 / cpu)) writes/s on one core);" \
    "journal lines $(( $(bleadvd_lines) - lines_before )); RSS $rss_before -> $(bleadvd_rss) KiB"
done
