#!/usr/bin/env bash
# More advertisements than slots (#67): three more advertisements than the adapter has slots
# (5 without extended advertising, the kernel's: 8 advertisements), one of priority 10 and the
# rest of priority 0, turns asked of 2 s (3 s without extended advertising, as bleadvd
# lengthens them there so that each stays through the kernel's own round). Judged from outside bleadvd:
# - hci1's controller reports every one of them within one full round of turns, and the
#   priority-10 one in every 12-s window (the kernel's own turns among 5 instances take 10 s);
#   one of those taking turns is a BTHome sensor, which Home Assistant's bthome-ble decodes
#   from what hci1 heard as it does when it is on air alone;
# - the bus record (dbus-monitor): no UnregisterAdvertisement from bleadvd while they take turns
#   (a turn changes what a slot carries, in place: #78 item 7), and no RegisterAdvertisement but
#   the check a second after each in-place update, one a turn, which BlueZ answers AlreadyExists
#   while it holds the advertisement;
# - a local program as user nobody (Tests/TestSupport/Peers/slot_taker.py) that registers an
#   advertisement the moment a slot frees gets none while they take turns: BlueZ's
#   ActiveInstances stays at every slot throughout, bleadvd holding them all; once bleadvd
#   stops, it takes every slot (so it could have taken one);
# - bleadvctl status: the priority-10 one on, the others rotating with their share; the journal
#   says how the slots are shared.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

manager() { busctl get-property org.bluez /org/bluez/hci0 org.bluez.LEAdvertisingManager1 "$1" | awk '{print $2}'; }
total=$(( $(manager SupportedInstances) + $(manager ActiveInstances) ))
if bumble_controllers && ((total > 5)); then
  # Bumble's controller reports 240 sets; made to report 5 (testbed/controllers.py's fault
  # "sets"), as the radios of this scenario's other stack: read by the kernel as it sets hci0
  # up (powered off and on) and by bluetoothd as it takes the adapter (started again).
  controller_fault hci0 sets 5 > /dev/null
  sets_back() { clear_faults; hci0_set_up_again || true; }  # 240 again for the scenarios after this one
  on_exit sets_back
  hci0_set_up_again
  wait_for 10 "five slots" '(( $(manager SupportedInstances) + $(manager ActiveInstances) == 5 ))'
  total=5
fi
count=$(( total + 3 ))
config="$TESTBED_WORK/rotation.toml"
{
  printf 'adapter = "hci0"\n[slots]\nrotate_seconds = 2\n'
  printf '[advertisement.beacon]\npriority = 10\ntype = "broadcast"\nmanufacturer_data = { "0xFFFF" = "b0" }\n'
  # ad1 is a BTHome sensor: Home Assistant's parser decodes it rotated as it does on air alone.
  printf '[advertisement.ad1.bthome]\ntemperature = 21.5\n'
  for i in $(seq 2 $(( count - 1 ))); do
    printf '[advertisement.ad%d]\ntype = "broadcast"\nmanufacturer_data = { "0xFFFF" = "a%03x" }\n' "$i" "$i"
  done
} > "$config"
echo "hci0 has $total advertising slots; $count advertisements, one of priority 10, turns of 2 s"

start_bleadvd "$config" --log-level debug
rotating() { bleadvctl status --json | grep -c '"state": "rotating"' || true; }
wait_for 20 "$(( count - 1 )) rotating" '[[ $(rotating) == $(( count - 1 )) ]]' || { bleadvctl status; fail "the advertisements do not take turns"; }
bleadvctl status | sed 's/^/    /'
[[ $(advertisement_states) == *beacon=on* ]] || fail "the priority-10 advertisement is not on air: $(advertisement_states)"
grep '^<5>slots: ' "$TESTBED_WORK/bleadvd.log" | tail -n1 | sed 's/^<5>/    journal: /'
expect_line "slots: $count advertisement(s) for $total of $total slot(s) on hci0: beacon on air throughout; " "$(grep '^<5>slots: ' "$TESTBED_WORK/bleadvd.log")"

# The turn's length as bleadvd chose it: 2 s, or longer without extended advertising, where the
# kernel shows the 5 in turn, 2 s each, and each must stay through that round.
turn=$(grep '^<5>slots: ' "$TESTBED_WORK/bleadvd.log" | tail -n1 | sed -nE 's/.* ([0-9]+) s a turn.*/\1/p')
[[ -n "$turn" ]] || fail "the journal does not say how long a turn is"
round=$(( (count - 1) * turn ))
seconds=$(( round + 8 ))
# The local program that takes a slot the moment one frees, as user nobody (Debian's BlueZ policy
# lets any user call RegisterAdvertisement).
install -m 0644 "$TESTBED_ROOT/Tests/TestSupport/Peers/slot_taker.py" /tmp/slot_taker.py
taker_log="$TESTBED_WORK/slot-taker.log"
runuser -u nobody -- python3 /tmp/slot_taker.py unix:path=/run/dbus/system_bus_socket /org/bluez/hci0 > "$taker_log" 2>&1 &
taker=$!
wait_for 10 "the slot taker watching hci0" 'grep -qx ready "$taker_log"' || fail "the slot taker did not start: $(cat "$taker_log")"
echo "scanning on hci1 for $seconds s (turns of $turn s; a full round of them is $round s), user nobody's slot taker watching:"
record_bus "$TESTBED_WORK/rotation-bus.log" "$TESTBED_WORK/rotation-owners.log"
# BlueZ's count of the slots in use, twice a second, beside the scan.
( while :; do manager ActiveInstances; sleep 0.5; done ) > "$TESTBED_WORK/active.log" 2>/dev/null &
sampler=$!
from=$(date +%s.%N)
observe "$seconds" > /dev/null || true
to=$(date +%s.%N)
kill "$sampler" 2>/dev/null || true
stop_bus_record
taken=$(grep -c '^took ' "$taker_log" || true)
active=$(sort -n "$TESTBED_WORK/active.log" | uniq -c | awk '{printf "%s%d x %d", sep, $1, $2; sep = ", "}')
echo "    the slot taker got $taken slot(s) in $seconds s; ActiveInstances (looks x value): $active"
((taken == 0)) || fail "user nobody's program took $taken slot(s) from bleadvd's turns: $(cat "$taker_log")"
[[ $(sort -n "$TESTBED_WORK/active.log" | head -n1) == "$total" ]] || fail "a slot was free during the turns: ActiveInstances $active"
reports=$(python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 1 --reports --timestamps \
  | awk -v from="$from" -v to="$to" '$1 >= from && $1 <= to')
heard() { grep -E " [0-9a-f]*0[45]ffffff$1([0-9a-f]{2})*\$" <<< "$reports" | awk '{print $1}'; }
missing=()
for i in $(seq 2 $(( count - 1 ))); do
  [[ -n "$(heard "$(printf 'a%03x' "$i")")" ]] || missing+=("ad$i")
done
# The sensor's reports: its BTHome service data (AD type 0x16, UUID 0xFCD2), decoded by bthome-ble.
sensor=$(grep -E ' [0-9a-f]*16d2fc' <<< "$reports" | tail -n1 || true)
if [[ -z "$sensor" ]]; then
  missing+=("ad1")
else
  read -r _ address data <<< "$sensor"
  service=$(python3 -c 'import sys
data = bytes.fromhex(sys.argv[1])
while data:
    n = data[0]
    if data[1:4] == bytes([0x16, 0xd2, 0xfc]): print(data[4:1 + n].hex())
    data = data[1 + n:]' "$data")
  decoded=$(decode bthome "$address" "$service") || fail "bthome-ble decoded nothing from the rotated sensor's $service"
  grep -qx "temperature 21.5" <<< "$decoded" || fail "bthome-ble read the rotated sensor as: $decoded"
  echo "    bthome-ble decodes the rotated sensor as on air alone: $(tr '\n' ' ' <<< "$decoded")"
fi
((${#missing[@]} == 0)) || fail "hci1 did not hear ${missing[*]} in $seconds s"
echo "    hci1 heard all $(( count - 1 )) that take turns (a BTHome sensor among them), and the beacon $(heard b0 | wc -l) time(s)"
beacon_times=$(heard b0)
gaps=$(awk -v from="$from" -v to="$to" 'BEGIN { last = from } { if ($1 - last > max) max = $1 - last; last = $1 } END { if (to - last > max) max = to - last; printf "%.1f", max }' <<< "$beacon_times")
echo "    the longest stretch without the beacon: $gaps s"
awk -v gap="$gaps" 'BEGIN { exit !(gap <= 12) }' || fail "hci1 went $gaps s without hearing the priority-10 advertisement"

registers=$(awk '$NF == "RegisterAdvertisement"' "$TESTBED_WORK/rotation-bus.log" | grep -c . || true)
unregisters=$(awk '$NF == "UnregisterAdvertisement"' "$TESTBED_WORK/rotation-bus.log" | grep -c . || true)
turns=$(awk -v from="$from" -v to="$to" -v turn="$turn" 'BEGIN { printf "%d", (to - from) / turn + 1 }')
echo "    the bus: $registers RegisterAdvertisement (the checks after each in-place update) and $unregisters UnregisterAdvertisement in $seconds s ($turns turns at most)"
(( unregisters == 0 && registers <= turns )) || fail "a turn unregistered, which frees a slot for a moment, or registered more than its check"
stop_bleadvd
# bleadvd gone, its slots free: the taker takes them at once, as it would have taken any a turn freed.
wait_for 10 "the slot taker holding all $total slots" '(( $(grep -c "^took " "$taker_log" || true) == total ))' \
  || fail "the slot taker did not take the slots bleadvd left ($(grep -c '^took ' "$taker_log" || true) of $total): $(cat "$taker_log")"
echo "    once bleadvd stopped, user nobody's slot taker took all $total slots"
kill "$taker" 2>/dev/null || true
