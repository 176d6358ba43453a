#!/usr/bin/env bash
# testbed-timeout: 600
# What stays on air while centrals are connected (#50), as a scanner on another controller hears
# it: bleadvd on hci0 with a BTHome sensor and a connectable advertisement naming a GATT service;
# Bumble on hci1 (A) and on hci2 (B, also the scanner) on host stacks of their own.
# 1. Before any link, both are heard.
# 2. A connects and holds its link: both are heard during it, and status says on.
# 3. B connects too, reads the GATT value and scans during the two links: each central served,
#    both advertisements heard.
# 4. Both leave: both heard again.
# 5. One advertisement alone (on a controller with extended advertising, the set A connected
#    through is the only one, so nothing else kept the air): heard during A's link too.
# The scanner counts reports per payload (bumble_central.py's scan: step, passive): BTHome's
# service data 0xFCD2, and the lamp service's UUID that the gateway advertisement lists (its name
# goes in the scan response, which a passive scan does not ask for).
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

[[ -e /sys/class/bluetooth/hci2 ]] || fail "needs three controllers (testbed/run.sh --controllers 3)"
fresh_bluetoothd hci0
config="$TESTBED_ROOT/testbed/configs/sensor-beside-lamp.toml"
brightness=6e400002-b5a3-f393-e0a9-e50e24dcca9e
start_bleadvd "$config"
address=$(adapter_address hci0)
start_central a 1 "$address"
start_central b 2 "$address"
hold=$TESTBED_WORK/hold
rm -rf "$hold"; mkdir -p "$hold"

# counted FILE: "kitchen=N gateway=N", the reports of each in a scan's lines (from hci0's address).
counted() {
  awk -v address="$address" '
    $1 == "heard" && $2 == address { if ($3 ~ /16d2fc/) k += $4; if ($3 ~ /9ecadc240ee5a9e093f3a3b50100406e/) g += $4 }
    END { printf "kitchen=%d gateway=%d", k, g }' "$1"
}
# scan SECONDS: B scans without a link; prints what it heard of each.
scan() {
  central_run b --no-link "scan:$1" > "$TESTBED_WORK/scan.lines"
  counted "$TESTBED_WORK/scan.lines"
}
# expect_heard COUNTS WHAT: fails unless both advertisements were heard in COUNTS.
expect_heard() {
  [[ "$1" =~ kitchen=[1-9].*gateway=[1-9] ]] || fail "$2: the scanner on hci2 did not hear both advertisements ($1)"
}

echo "1. before any link"
heard=$(scan 5); echo "    hci2 heard $heard; status: $(advertisement_states)"
sed 's/^/    /' "$TESTBED_WORK/scan.lines"
expect_heard "$heard" "before any link"

echo "2. A (hci1) connects and holds its link"
before=$(relinks)
central_run a "read:$brightness" "touch:$hold/a-connected" "await:$hold/a-release" > "$TESTBED_WORK/a.lines" &
a_run=$!
wait_for 60 "A's link" "[ -e '$hold/a-connected' ]"
relinked "$before"
during=$(scan 5); during_states=$(advertisement_states)
echo "    during A's link hci2 heard $during; status: $during_states"

echo "3. B (hci2) connects too, reads and scans during both links"
b_started=$(date '+%H:%M:%S.%N')
central_run b "read:$brightness" "scan:5" > "$TESTBED_WORK/b.lines"
sed 's/^/    B: /' "$TESTBED_WORK/b.lines"
if ! grep -q "read $brightness: 0a" "$TESTBED_WORK/b.lines"; then
  echo "    B was not served; hci0's record since B's run started (links, ATT):"
  hci_since "$b_started" | grep -E "hci0|Handle|ATT|Connect|Disconnect" | awk 'NR <= 80' | sed 's/^/    /'
fi
both=$(counted "$TESTBED_WORK/b.lines")
echo "    during both links hci2 heard $both; status: $(advertisement_states)"

echo "4. both leave"
touch "$hold/a-release"
wait "$a_run" || true
sed 's/^/    A: /' "$TESTBED_WORK/a.lines"
sleep 1
after=$(scan 5); echo "    after the links hci2 heard $after; status: $(advertisement_states)"

echo "5. one advertisement alone (gateway), A connects and holds its link"
bleadvctl off kitchen > /dev/null
before=$(relinks)
central_run a "read:$brightness" "touch:$hold/a-again" "await:$hold/a-again-release" > "$TESTBED_WORK/a2.lines" &
a_run=$!
wait_for 60 "A's link" "[ -e '$hold/a-again' ]"
relinked "$before"
alone=$(scan 5); echo "    during A's link hci2 heard $alone; status: $(advertisement_states)"
touch "$hold/a-again-release"
wait "$a_run" || true
grep -E "^<[0-6]>" "$TESTBED_WORK/bleadvd.log" | grep -vE "GATT|starting|ready" | sed 's/^/    journal: /'

grep -q "read $brightness: 0a" "$TESTBED_WORK/a.lines" || fail "A was not served"
grep -q "read $brightness: 0a" "$TESTBED_WORK/b.lines" || fail "B was not served beside A"
expect_heard "$during" "during A's link"
expect_heard "$both" "during two links"
expect_heard "$after" "after the links"
[[ "$alone" =~ gateway=[1-9] ]] || fail "one advertisement alone: not heard during a link ($alone)"
[[ "$during_states" == "gateway=on kitchen=on" ]] || fail "status during the link: $during_states"
stop_bleadvd
