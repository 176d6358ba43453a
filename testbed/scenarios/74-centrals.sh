#!/usr/bin/env bash
# testbed-timeout: 600
# Connections you can see and control (#66 items 2 and 3), as two centrals on host stacks of
# their own live them: Bumble on hci1 (A) and on hci2 (B), bleadvd on hci0 with
# [centrals] max_centrals = 1, and bleadvctl watch running throughout.
# 1. A connects, reads and subscribes: bleadvctl centrals lists it with hci0, the MTU of its
#    read and its subscription; watch prints its link, its MTU and the subscription; a value
#    longer than the MTU carries, set on a characteristic that notifies, is said by watch,
#    status and the journal.
# 2. B connects beside it: bleadvd ends B's link at once (max_centrals 1; bluetoothd answers
#    Device1.Disconnect once the controller ended the link, about a second under emulation);
#    5 s after it connected B finds its link ended by the peripheral (0x13); the journal and
#    watch say why.
# 3. bleadvctl disconnect A: A's link ends, and watch says who ended it, and that no central
#    is subscribed any longer (A was not bonded: bluetoothd drops its subscription).
# 4. A reload sets idle_disconnect_seconds = 5: A connects and does nothing; its link is ended
#    about 5 s later, and watch says so.
# (central_run's lines begin with four spaces.)
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

[[ -e /sys/class/bluetooth/hci2 ]] || fail "needs three controllers (testbed/run.sh --controllers 3)"
fresh_bluetoothd hci0
level=6e400033-b5a3-f393-e0a9-e50e24dcca9e
label=6e400034-b5a3-f393-e0a9-e50e24dcca9e
hold=$TESTBED_WORK/hold
rm -rf "$hold"; mkdir -p "$hold"
write_config() {
  cat > "$TESTBED_WORK/centrals.toml" <<EOF
adapter = "hci0"

[centrals]
$1

[advertisement.box]
local_name = "Links"
services = ["pi"]

[service.pi]
uuid = "6e400030-b5a3-f393-e0a9-e50e24dcca9e"

[service.pi.characteristic.level]
uuid = "$level"
format = "uint8"
flags = ["read", "write"]
security = "none"
value = 7

[service.pi.characteristic.label]
uuid = "$label"
format = "utf8"
flags = ["read", "notify"]
value = "pi"
EOF
}
write_config "max_centrals = 1"
start_bleadvd "$TESTBED_WORK/centrals.toml"
bleadvctl watch > "$TESTBED_WORK/watch.out" 2>&1 &
watch_pid=$!
address=$(adapter_address hci0)
start_central a 1 "$address"
start_central b 2 "$address"

watched() { grep -c "$1" "$TESTBED_WORK/watch.out" || true; }

echo "1. A connects, reads and subscribes; centrals lists it"
before=$(relinks)
central_run a "read:$level" "subscribe:$label" "touch:$hold/a-read" "await:$hold/a-release" > "$TESTBED_WORK/a.lines" &
a_run=$!
wait_for 60 "A's read" "[ -e '$hold/a-read' ]" || fail "A did not connect, read and subscribe"
wait_for 10 "centrals to list A" "bleadvctl centrals | grep -q 'mtu [0-9]'" || fail "centrals does not list A with an MTU: $(bleadvctl centrals)"
listed=$(bleadvctl centrals)
echo "    bleadvctl centrals: $listed"
a=${listed%% *}
[[ "$listed" == *" hci0 connected "* ]] || fail "centrals does not list A on hci0: $listed"
bleadvctl centrals --json | sed 's/^/    --json: /'
# #66 item 2: a subscription, as BlueZ's StartNotify says it (not which central: A alone is
# here), or, from BlueZ 5.69, its AcquireNotify ("by A": a socket per central, #81).
wait_for 10 "watch to print A's subscription" '[[ $(watched "^subscribed pi.label\( by $a\)\?$") -ge 1 ]]' \
  || fail "watch did not print the subscription: $(cat "$TESTBED_WORK/watch.out")"
subscribed=$(bleadvctl centrals)
[[ "$subscribed" == *" subscribed pi.label"* ]] || fail "centrals does not list A's subscription: $subscribed"
echo "    watch: subscribed pi.label; centrals: $subscribed"
# #66 item 5: watch prints the MTU BlueZ gave with the read; a value set longer than it carries
# in a notification (MTU - 3 bytes) is said by watch and status.
wait_for 10 "watch to print A's MTU" '[[ $(watched "link $a hci0 mtu ") -ge 1 ]]' \
  || fail "watch did not print A's MTU: $(cat "$TESTBED_WORK/watch.out")"
mtu=$(sed -n "s/^link $a hci0 mtu \([0-9]*\).*/\1/p" "$TESTBED_WORK/watch.out" | head -n1)
echo "    watch: $(grep -m1 "^link $a" "$TESTBED_WORK/watch.out")"
bleadvctl set pi "label=$(printf 'x%.0s' $(seq 300))"
if ((mtu - 3 < 300)); then
  wait_for 10 "watch to print the cut" '[[ $(watched "link $a hci0 mtu $mtu cut pi.label") -ge 1 ]]' \
    || fail "watch did not print the notification cut for A: $(cat "$TESTBED_WORK/watch.out")"
  echo "    watch: $(grep -m1 "cut pi.label" "$TESTBED_WORK/watch.out")"
  row=$(bleadvctl status | grep "^pi ")
  echo "    status: $row"
  [[ "$row" == *"(label's notifications reach $a cut to $((mtu - 3)) bytes)"* ]] || fail "status does not say the cut: $row"
  grep -q "pi.label: a notification of its 300-byte value reaches $a cut to $((mtu - 3)) bytes" "$TESTBED_WORK/bleadvd.log" \
    || fail "the journal does not say the cut"
fi
relinked "$before"

echo "2. B connects beside A: ended at once (max_centrals 1)"
central_run b "pause:5" link > "$TESTBED_WORK/b.lines"
sed 's/^/    B: /' "$TESTBED_WORK/b.lines"
b=$(sed -n 's/.*connected to .* from \([0-9A-F:]*\).*/\1/p' "$TESTBED_WORK/b.lines" | head -n1)
grep -q "link: ended (reason 0x13" "$TESTBED_WORK/b.lines" \
  || fail "B did not see its link ended by the peripheral: $(cat "$TESTBED_WORK/b.lines")"
grep -q "ending its link with hci0 (max_centrals 1: 1 already connected to hci0)" "$TESTBED_WORK/bleadvd.log" \
  || fail "the journal does not say max_centrals ended B's link"
ended=$(sed -n "s/.*$b's link with hci0 ended after \([0-9.]*\) seconds.*/\1/p" "$TESTBED_WORK/bleadvd.log" | head -n1)
echo "    bleadvd ended B's link ${ended:-?} s after it came up"
wait_for 10 "watch to print B's end" '[[ $(watched "disconnected $b hci0 \"max_centrals 1") -ge 1 ]]' \
  || fail "watch did not print B's end with its reason: $(cat "$TESTBED_WORK/watch.out")"

echo "3. bleadvctl disconnect A"
bleadvctl disconnect "$a" || fail "bleadvctl disconnect $a exited $?"
wait_for 10 "watch to print A's end" '[[ $(watched "disconnected $a hci0 \"bleadvctl disconnect\"") -ge 1 ]]' \
  || fail "watch did not print A's end by bleadvctl disconnect: $(cat "$TESTBED_WORK/watch.out")"
wait_for 10 "watch to print that none is subscribed" '[[ $(watched "^unsubscribed pi.label\( by $a\)\?$") -ge 1 ]]' \
  || fail "watch did not print the subscription's end: $(cat "$TESTBED_WORK/watch.out")"
touch "$hold/a-release"
wait "$a_run" || true
sed 's/^/    A: /' "$TESTBED_WORK/a.lines"
code=0; bleadvctl disconnect "$a" 2> "$TESTBED_WORK/disconnect.err" || code=$?
[[ $code == 2 ]] || fail "a second disconnect of A exited $code, not 2: $(cat "$TESTBED_WORK/disconnect.err")"
echo "    again: exit 2, $(cat "$TESTBED_WORK/disconnect.err")"

echo "4. idle_disconnect_seconds = 5: A connects and does nothing"
write_config "idle_disconnect_seconds = 5"
bleadvctl reload
started=$(date +%s.%N)
central_run a "pause:12" link > "$TESTBED_WORK/a2.lines"
sed 's/^/    A: /' "$TESTBED_WORK/a2.lines"
grep -q "link: ended (reason 0x13" "$TESTBED_WORK/a2.lines" || fail "A's idle link was not ended within 12 s"
grep -q "ending its link with hci0 (idle for [5-7] s, idle_disconnect_seconds 5)" "$TESTBED_WORK/bleadvd.log" \
  || fail "the journal does not say the idle link was ended: $(grep -i idle "$TESTBED_WORK/bleadvd.log" | tail -n 2)"

kill "$watch_pid" 2> /dev/null || true
echo "    watch printed:"
sed 's/^/        /' "$TESTBED_WORK/watch.out"
echo "    the journal:"
grep -E "ending its link|connected to hci0|link with hci0 ended" "$TESTBED_WORK/bleadvd.log" | sed 's/^/        /'
