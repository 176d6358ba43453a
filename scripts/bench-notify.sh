#!/usr/bin/env bash
# `make bench-notify`: what notifications cost bleadvd, natively: the release bleadvd on a
# private dbus-daemon with BlueZ's stand-in (Tests/TestSupport/Peers/bluez_standin.py) playing a
# BlueZ 5.82 (a socket per central: AcquireNotify), COUNT values of one characteristic as fast
# as bleadvd takes them (testbed/bench/notify_flood.py, 32 calls in flight):
# - `Set` (bleadvctl set): every subscriber, as a PropertiesChanged of Value, which bluetoothd
#   sends each central whose notifications are on; coalesced to one per 100 ms by design;
# - `Notify` (bleadvctl set --central) to one central, and round robin to three, each through its
#   socket, which the stand-in drains as bluetoothd does;
# - the same with one of the three sockets never read (a bluetoothd that does not read it): the
#   others are not waited on, and what it dropped is counted.
# For each: calls a second, what reached the centrals, bleadvd's CPU time per call and per
# notification (from /proc/PID/schedstat), RSS. (bluetoothd's share, and the air's, are not in it.)
#   scripts/bench-notify.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-5000}
. scripts/private-bus.sh
start_bench_bus
start_bluez_standin "$work"
standin() { DBUS_SYSTEM_BUS_ADDRESS=$bus_address busctl --system call org.bluez /test test.StandIn "$@"; }
standin SetRelease ss hci0 5.82
uuid=6e400041-b5a3-f393-e0a9-e50e24dcca9e
cat > "$work/config.toml" <<CONF
[service.meter]
uuid = "6e400040-b5a3-f393-e0a9-e50e24dcca9e"

[service.meter.characteristic.level]
uuid = "$uuid"
format = "uint16"
flags = ["read", "notify"]
security = "none"
value = 0
CONF
start_release_bleadvd "$work" "$work/config.toml"
for n in 1 2 3; do standin Connect ss hci0 "00:AA:02:00:00:0$n" > /dev/null; done
echo "bleadvd $(.build/release/bleadvd --version 2>/dev/null || true); $count values a run, 32 calls in flight; $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1)"
for run in "value" "sockets 1" "sockets 3" "sockets 3 1"; do
  sleep 0.5
  cpu_before=$(bleadvd_cpu_ns); rss_before=$(bleadvd_rss)
  # shellcheck disable=SC2086 # the run's words are its arguments
  line=$(/usr/bin/python3 testbed/bench/notify_flood.py "$bus_address" "$uuid" "$count" $run)
  cpu=$(( $(bleadvd_cpu_ns) - cpu_before ))
  case "$run" in
    value) what="Set, every subscriber (Value)"; delivered=$(sed -n 's/.* \([0-9]*\) PropertiesChanged.*/\1/p' <<< "$line") ;;
    "sockets 3 1") what="Notify, 3 centrals, one socket never read"; delivered=$(grep -o '[0-9]* last' <<< "$line" | awk '{ s += $1 } END { print s }')
      delivered=$((delivered + $(grep -o '[0-9]* (stalled)' <<< "$line" | awk '{ s += $1 } END { print s }'))) ;;
    *) what="Notify, ${run#sockets } central(s), each through its socket"; delivered=$(grep -o '[0-9]* last' <<< "$line" | awk '{ s += $1 } END { print s }') ;;
  esac
  echo "$what: $line"
  if [[ $run == value ]]; then
    per="$delivered notifications: Set is coalesced to one per 100 ms, the newest value winning"
  else
    per="$((cpu / delivered / 1000)).$(( (cpu / delivered / 100) % 10 )) µs a notification the stand-in read ($delivered)"
  fi
  echo "    bleadvd $((cpu / count / 1000)).$(( (cpu / count / 100) % 10 )) µs of CPU a call; $per; RSS $rss_before -> $(bleadvd_rss) KiB"
done
DBUS_SYSTEM_BUS_ADDRESS=$bus_address .build/release/bleadvctl centrals | sed 's/^/    bleadvctl centrals: /'
