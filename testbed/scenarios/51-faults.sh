#!/usr/bin/env bash
# Faults other than a crash, with the real bluetoothd:
# - bluetoothd stopped cleanly (SIGTERM: it sends Release first) and started, 3 times: both
#   advertisements registered again, following BlueZ's events (bleadvd logs no warning; the
#   seconds after hci0's advertising manager answered are printed);
# - hci0 powered off behind bleadvd's back (testbed/mgmt.py, as `btmgmt power off`): with
#   power_on = true bleadvd powers it on and re-registers; with power_on = false it waits, says
#   why in status, and re-registers once the adapter is powered on again;
# - one advertisement more than hci0 has free slots: they take turns through the slots (#67),
#   each `rotating` with its share; one turned off, the others fit and are all on air, the last
#   heard by hci1.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

two="$TESTBED_WORK/two.toml"
cp "$TESTBED_ROOT/testbed/configs/51-two-broadcasts.toml" "$two"

open_scenario "$two" 2
echo "bluetoothd stopped cleanly (SIGTERM) and started again, 3 times:"
before=$(bleadvd_log_lines)
python3 "$TESTBED_ROOT/testbed/crashloop.py" --signal TERM --times 3 --expect 2 --log "$TESTBED_WORK/bluetoothd-stops.log" \
  | tee "$TESTBED_WORK/stops.txt" | sed 's/^/    /'
bleadvd_quiet_since "$before" >&2 || exit 1

echo "hci0 powered off behind bleadvd's back (power_on = true):"
off_at=$(date +%s.%N)
python3 "$TESTBED_ROOT/testbed/mgmt.py" 0 power off > /dev/null
wait_for 20 "hci0 powered again and both on air" 'powered hci0 true && [[ "$(active_instances)" == 2 ]]' \
  || { echo "hci0 $(busctl get-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Powered), ActiveInstances: $(active_instances)" >&2; bleadvctl status >&2; exit 1; }
echo "    bleadvd powered hci0 on and re-registered both in $(elapsed "$off_at") s"
stop_bleadvd

echo "the same with power_on = false:"
sed 's/^adapter = "hci0"$/adapter = "hci0"\npower_on = false/' "$two" > "$TESTBED_WORK/nopower.toml"
start_bleadvd "$TESTBED_WORK/nopower.toml"
wait_for 30 "both on air" '[[ "$(active_instances)" == 2 ]]'
python3 "$TESTBED_ROOT/testbed/mgmt.py" 0 power off > /dev/null
wait_for 20 "bleadvd to say why they are off" 'bleadvctl status | grep -q "power_on is false"'
sleep 2
powered hci0 false || { echo "bleadvd powered hci0 on although power_on = false" >&2; exit 1; }
bleadvctl status | sed 's/^/    /'
on_at=$(date +%s.%N)
python3 "$TESTBED_ROOT/testbed/mgmt.py" 0 power on > /dev/null
wait_for 20 "both on air again" '[[ "$(active_instances)" == 2 ]]'
echo "    powered on by hand: both on air again $(elapsed "$on_at") s later"
stop_bleadvd

free=$(busctl get-property org.bluez /org/bluez/hci0 org.bluez.LEAdvertisingManager1 SupportedInstances | awk '{print $2}')
count=$((free + 1))
echo "$count advertisements for $free free slots on hci0:"
many="$TESTBED_WORK/many.toml"
echo 'adapter = "hci0"' > "$many"
for i in $(seq 1 "$count"); do
  printf '[advertisement.a%02d]\ntype = "broadcast"\nmanufacturer_data = { "0xFFFF" = "a%03d" }\n' "$i" "$i" >> "$many"
done
last=$(printf 'a%02d' "$count")
start_bleadvd "$many"
wait_for 30 "$free on air" '[[ "$(active_instances)" == "$free" ]]'
rotating() { bleadvctl status --json | grep -c '"state": "rotating"' || true; }
wait_for 20 "all $count taking turns" '[[ $(rotating) == $count ]]' || { bleadvctl status; fail "the $count do not take turns"; }
bleadvctl status | grep -E "^$last " | sed 's/^/    /'
bleadvctl status | grep -E "^$last " | grep -q "on air $(awk -v f="$free" -v c="$count" 'BEGIN { printf "%d", f * 100 / c + 0.5 }')% of the time" \
  || fail "$last does not say its share of air time"
freed_at=$(date +%s.%N)
bleadvctl off a01
off_took=$(elapsed "$freed_at")
wait_for 10 "the others all on air" '[[ $(advertisement_states) != *rotating* ]] && bleadvctl status | grep -qE "^$last +advertisement +on "' \
  || { bleadvctl status; fail "with a01 off the others do not all go on air"; }
echo "    bleadvctl off a01 returned after $off_took s; the others all on air, turns ended, $(elapsed "$freed_at") s after the off began"
grep '^<5>slots: ' "$TESTBED_WORK/bleadvd.log" | sed 's/^<5>/        journal: /'
observe_until 30 "manufacturer=0xffff:$(printf 'a%03d' "$count")" > /dev/null && echo "    hci1 hears $last"
stop_bleadvd
