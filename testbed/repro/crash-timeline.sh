#!/usr/bin/env bash
# testbed-timeout: 900
# Scenario 50's crash loop (bluetoothd killed with -9 and started again, ROUNDS times; default
# 20, BLEADVD_REPRO_ROUNDS) with the bus's own record (lib.sh's record_bus: every message to or
# from bleadvd, BlueZ's object and property signals), printed for each round that took more
# than LIMIT s (default 0.6, BLEADVD_REPRO_LIMIT) from hci0's advertising manager answering to
# both registered, as times from the moment bluetoothd took org.bluez again; then whether
# bleadvd logged a warning, and its debug log's end.
#   testbed/run.sh testbed/repro/crash-timeline.sh
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"
export PATH="$TESTBED_BUILD/release:$PATH"  # the release build, as testbed/scenarios/ use

rounds=${BLEADVD_REPRO_ROUNDS:-$(kernel_arg bleadvd_repro.rounds)}
rounds=${rounds:-20}
limit=${BLEADVD_REPRO_LIMIT:-0.6}
config="$TESTBED_WORK/crash.toml"
crash_loop_config "$config"
fresh_bluetoothd
start_bleadvd "$config" --log-level debug
wait_for 30 "both advertisements on air" '[[ "$(active_instances)" == 2 ]]'

bus_log=$TESTBED_WORK/timeline-bus.log owners_log=$TESTBED_WORK/timeline-owners.log
record_bus "$bus_log" "$owners_log"
trap 'stop_bus_record; stop_bleadvd' EXIT
sleep 1

before=$(bleadvd_log_lines)
crash_loop "$rounds" | tee "$TESTBED_WORK/crashes.txt" | sed 's/^/    /' || true
sleep 1
stop_bus_record

# The times bluetoothd took org.bluez (a new owner, not the empty string), one a line.
bluez_owners "$owners_log" | awk '$3 != "\"\"" { print $1 }' > "$TESTBED_WORK/owned.txt"
sed -nE 's/^crash ([0-9]+): .* registered ([0-9.]+) s later/\1 \2/p' "$TESTBED_WORK/crashes.txt" \
  | while read -r round took; do
      awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t > l) }' || continue
      # Crash N is the Nth time org.bluez was taken since the record started.
      t0=$(sed -n "$((round))p" "$TESTBED_WORK/owned.txt")
      [[ -n "$t0" ]] || continue
      t1=$(sed -n "$((round + 1))p" "$TESTBED_WORK/owned.txt")
      t1=${t1:-$(awk -v t="$t0" 'BEGIN { print t + 4 }')}
      echo "---- crash $round: $took s; the bus from bluetoothd taking org.bluez (+s, dbus-monitor --profile)"
      awk -v t0="$t0" -v t1="$t1" '$2 >= t0 && $2 < t1 { printf "    %+.3f %s %s -> %s %s %s %s\n", $2 - t0, $1, $4, $5, $6, $7, $8 }' "$bus_log" \
        | { grep -v ' sig .*PropertiesChanged.*/org/bluez/hci[01]/dev_' || echo "    (nothing recorded)"; } | head -n 80
    done
bleadvd_quiet_since "$before" || true
echo "---- bleadvd's log (debug), last 150 lines"
tail -n 150 "$TESTBED_WORK/bleadvd.log"
