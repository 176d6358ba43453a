#!/usr/bin/env bash
# bluetoothd killed with -9 and started again, 20 times in a row, two advertisements enabled:
# after each crash both are registered again on hci0 (ActiveInstances), following BlueZ's own
# events (bleadvd logs no warning: no call failed and waited for its retry timer, the audit
# found nothing to mend); hci1 hears them after the first and the last crash. How long each
# took after hci0's LEAdvertisingManager1 answered is printed, with bluetoothd's share (its
# answers to RegisterAdvertisement, as bleadvd timed them): figures, not a limit, since under
# emulation they follow the machine's load (testbed/repro/crash-timeline.sh records a loop).
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

config="$TESTBED_WORK/crash.toml"
crash_loop_config "$config"
# heard: hci1 hears both (each scan tried 3 times: once in CI, hci1's BlueZ made no device of
# an advertiser its controller was reporting, for a whole 30 s scan).
heard() {
  local text attempt
  for text in "manufacturer=0xffff:c1a5" "service_data=00009999-0000-1000-8000-00805f9b34fb:c2a5"; do
    for attempt in 1 2 3; do
      observe_until 20 "$text" && break
      ((attempt < 3)) || return 1
    done
  done
}
diagnose() {
  echo "---- bleadvctl status"; bleadvctl status || true
  echo "---- bleadvd's log around the last crash"; grep -n "" "$TESTBED_WORK/bleadvd.log" | tail -n 80
  echo "---- bluetoothd's last crash"; sed -n '/---- crash/h; /---- crash/!H; ${x;p}' "$TESTBED_WORK/bluetoothd-crashes.log" | tail -n 40
}

fresh_bluetoothd
start_bleadvd "$config" --log-level debug
wait_for 30 "both advertisements on air" 'bleadvctl status --json | grep -c "\"state\": \"on\"" | grep -qx 2'
echo "before the crashes, hci1 hears both:"
heard | sed 's/^/    /'

echo "20 crashes (kill -9, 0.3 s, bluetoothd started again):"
before=$(bleadvd_log_lines)
if ! crash_loop 20 | tee "$TESTBED_WORK/crashes.txt" | sed 's/^/    /'; then
  diagnose; exit 1
fi
sed -nE 's/.* registered ([0-9.]+) s later/\1/p' "$TESTBED_WORK/crashes.txt" | sort -n > "$TESTBED_WORK/reregister.txt"
echo "    re-registered after the manager answered, s: min $(head -1 "$TESTBED_WORK/reregister.txt"), median $(sed -n 10p "$TESTBED_WORK/reregister.txt")-$(sed -n 11p "$TESTBED_WORK/reregister.txt"), max $(tail -1 "$TESTBED_WORK/reregister.txt")"
# bluetoothd's share: the seconds bleadvd waited for its answers to RegisterAdvertisement on
# hci0, summed for each bluetoothd (its generation, #N, in bleadvd's debug log).
tail -n +"$((before + 1))" "$TESTBED_WORK/bleadvd.log" \
  | sed -nE 's/^<7>registered .* on hci0 of bluetoothd #([0-9]+) .* in ([0-9.]+) seconds$/\1 \2/p' \
  | awk '{ s[$1] += $2 } END { for (g in s) printf "%.2f\n", s[g] }' | sort -n > "$TESTBED_WORK/bluez-share.txt"
echo "    bluetoothd answering its two RegisterAdvertisement calls, s: min $(head -1 "$TESTBED_WORK/bluez-share.txt"), median $(sed -n 10p "$TESTBED_WORK/bluez-share.txt")-$(sed -n 11p "$TESTBED_WORK/bluez-share.txt"), max $(tail -1 "$TESTBED_WORK/bluez-share.txt")"
echo "    over 1 s: $(awk '$1 > 1.0' "$TESTBED_WORK/reregister.txt" | wc -l) of 20"
bleadvd_quiet_since "$before" || { diagnose; exit 1; }
echo "    bleadvd logged no warning: every registration followed BlueZ's events"
echo "after the last crash, hci1 hears both:"
heard | sed 's/^/    /'
stop_bleadvd
