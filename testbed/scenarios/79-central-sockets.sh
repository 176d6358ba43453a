#!/usr/bin/env bash
# testbed-timeout: 1200
# GATT per central (#81 items 1 and 2), as three centrals on host stacks of their own see it:
# Bumble on hci1 (A, bonded in a bleadvd pairing window: the owner), on hci2 (B, bonded in a
# window whose record is then removed: a central bonded around bleadvd) and on hci3 (C, not
# bonded), bleadvd on hci0 with a service whose level notifies and whose secret notifies to
# admitted centrals alone (security encrypted), and bleadvctl watch running throughout.
# 1. A and B bond; B's record goes, and root adopts A again.
# 2. The three connect together (A and B encrypted) and subscribe, each after asking its own ATT
#    MTU: centrals lists each subscription with its own central and MTU, and watch names the
#    central of each.
# 3. A set of level and secret: each hears level; A hears secret (through its socket: the change
#    of Value waits while B is connected) and B does not.
# 4. A value for C alone (bleadvctl set --central): C hears it, A and B do not.
# 5. C leaves: A and B still hear the next value (BlueZ 5.82 closes one of their sockets then:
#    said, not failed).
# 6. A leaves and comes back (bonded, encrypted, subscribing again, as a phone does): it hears
#    the next value (bluetoothd kept its notifications on, and gives it no socket on this link:
#    Value carries what goes to all).
# On BlueZ before 5.69 (Debian 12's 5.66), bluetoothd sends every subscriber alike: step 2 lists
# subscriptions as BlueZ's StartNotify gives them, secret's change waits for B to leave (A's too,
# in step 3), and step 4 is refused (exit 1).
# (central_run's lines begin with four spaces.)
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

[[ -e /sys/class/bluetooth/hci3 ]] || fail "needs four controllers (testbed/run.sh --controllers 4)"
level=6e400041-b5a3-f393-e0a9-e50e24dcca9e
secret=6e400042-b5a3-f393-e0a9-e50e24dcca9e
turn=$TESTBED_WORK/turn
config="$TESTBED_WORK/sockets.toml"
state_dir="$TESTBED_WORK/state"
keys_a="$TESTBED_WORK/a.keys" keys_b="$TESTBED_WORK/b.keys"
cat > "$config" <<EOF
adapter = "hci0"

[pairing]
method = "just-works"
attempts = 1

[advertisement.meter-ad]
local_name = "Meter"
services = ["meter"]

[service.meter]
uuid = "6e400040-b5a3-f393-e0a9-e50e24dcca9e"

[service.meter.characteristic.level]
uuid = "$level"
format = "uint8"
flags = ["read", "notify"]
security = "none"
value = 0

[service.meter.characteristic.secret]
uuid = "$secret"
format = "uint8"
flags = ["read", "notify"]
security = "encrypted"
value = 0
EOF

fresh_bluetoothd hci0
a=$(adapter_address hci1) b=$(adapter_address hci2) c=$(adapter_address hci3)
forget_centrals() {
  local central
  for central in "$a" "$b"; do
    busctl call org.bluez /org/bluez/hci0 org.bluez.Adapter1 RemoveDevice o "/org/bluez/hci0/dev_${central//:/_}" 2> /dev/null || true
  done
}
forget_centrals
on_exit forget_centrals
rm -rf "$state_dir" "$keys_a" "$keys_b" "$turn"
mkdir -p "$turn"
start_bleadvd "$config" --state-directory "$state_dir"
bleadvctl watch > "$TESTBED_WORK/watch.out" 2>&1 &
watch_pid=$!
address=$(adapter_address hci0)
start_central a 1 "$address" --keys "$keys_a"
start_central b 2 "$address" --keys "$keys_b"
start_central c 3 "$address"
watched() { grep -c "$1" "$TESTBED_WORK/watch.out" || true; }
# so_far NAME: the lines of NAME's run under way (the central writes each as it goes; central_run
# prints them once the run ended).
so_far() { cat "$(ls -t "$TESTBED_WORK/$1".run.* | head -n 1)"; }
# show_runs: at the end, what each central's last run said (a failure leaves runs under way).
show_runs() {
  local central
  for central in a b c; do so_far $central 2> /dev/null | sed "s/^/    ${central^^} said: /" || true; done
}
on_exit show_runs
hex() { printf '%02x' "$1"; }
# BlueZ gives each central a socket from 5.69; the bed's stacks are 5.66 and 5.82.
sockets=0
[[ "$(bluetoothd --version)" == 5.6* ]] || sockets=1
echo "    bluetoothd $(bluetoothd --version): $( ((sockets)) && echo "a notification socket per central" || echo "every subscriber alike")"

echo "1. A and B bond in windows of their own; B's record goes, A is adopted again"
for central in a b; do
  bleadvctl pair 60 > "$TESTBED_WORK/pair-$central.out" 2>&1 &
  pair_pid=$!
  wait_for 10 "the window to open" "grep -q 'pairing window open' '$TESTBED_WORK/pair-$central.out'"
  central_run "$central" pair "read:$secret" > "$TESTBED_WORK/$central-pair.lines"
  cat "$TESTBED_WORK/$central-pair.lines"
  wait "$pair_pid" || fail "bleadvctl pair for ${central^^} did not exit 0: $(cat "$TESTBED_WORK/pair-$central.out")"
  grep -q " paired (just-works)" "$TESTBED_WORK/$central-pair.lines" || fail "${central^^} did not pair"
done
rm "$state_dir/bonds"
bleadvctl pair --adopt "$a" | sed 's/^/    /'

# together WAIT_FILE STEPS_A / STEPS_B / STEPS_C: the three connect one after the other (each once
# the advertisement is on air again beside the links before it) and do their steps, in the
# background; their lines in a.lines, b.lines, c.lines.
runs=()
connect() {
  local name=$1 before; shift
  before=$(relinks)
  central_run "$name" "$@" > "$TESTBED_WORK/$name.lines" &
  runs+=($!)
  wait_for 90 "${name^^} to subscribe" "[ -e '$turn/$name-subscribed' ]" || fail "${name^^} did not connect and subscribe: $(so_far "$name")"
  relinked "$before"
}

echo "2. the three connect together, each with its own MTU, and subscribe"
connect a --mtu 247 encrypt mtu "subscribe:$level" "subscribe:$secret" "touch:$turn/a-subscribed" \
  "await:$turn/set" "notified:$level=$(hex 7)" "notified:$secret=$(hex 9)" "touch:$turn/a-heard" \
  "await:$turn/for-c" "count:$level=3" "touch:$turn/a-counted" \
  "await:$turn/c-left" "notified:$level=$(hex 8)" "touch:$turn/a-done"
connect b --mtu 100 encrypt mtu "subscribe:$level" "subscribe:$secret" "touch:$turn/b-subscribed" \
  "await:$turn/set" "notified:$level=$(hex 7)" "heard:$secret=5" "touch:$turn/b-heard" \
  "await:$turn/for-c" "count:$level=3" "touch:$turn/b-counted" \
  "await:$turn/c-left" "notified:$level=$(hex 8)" "touch:$turn/b-done"
connect c --mtu 185 mtu "subscribe:$level" "touch:$turn/c-subscribed" \
  "await:$turn/set" "notified:$level=$(hex 7)" "touch:$turn/c-heard" \
  "await:$turn/for-c" "notified:$level=$(hex 42)" "touch:$turn/c-counted"
sleep 2
listed=$(bleadvctl centrals)
echo "$listed" | sed 's/^/    centrals: /'
grep "subscribed meter" "$TESTBED_WORK/watch.out" | sed 's/^/    watch: /' || true
for central in a b c; do so_far $central | grep "^mtu " | sed "s/^/    ${central^^}: /" || true; done
if ((sockets)); then
  # Each central's MTU as it says it (Bumble's answer to its MTU exchange) is the one listed.
  for central in "a:$a:meter.level,meter.secret" "b:$b:meter.level" "c:$c:meter.level"; do
    name=${central%%:*} rest=${central#*:}
    who=${rest%:*} subscriptions=${rest##*:}
    mtu=$(so_far "$name" | sed -n 's/^mtu [0-9]*: //p')
    line=$(grep "^$who " <<< "$listed") || fail "centrals does not list $who"
    [[ -n "$mtu" && "$line" == *" mtu $mtu "* && "$line" == *" subscribed $subscriptions" ]] \
      || fail "centrals lists $who as [$line], not with its MTU (${mtu:-none said}) and subscribed $subscriptions"
  done
  for who in "$a" "$b" "$c"; do
    [[ $(watched "^subscribed meter.level by $who$") == 1 ]] || fail "watch did not name $who's subscription to meter.level"
  done
  [[ $(watched "^subscribed meter.secret by $a$") == 1 ]] || fail "watch did not name A's subscription to meter.secret"
  [[ $(watched "^subscribed meter.secret by $b$") == 0 ]] || fail "watch says B, bonded around bleadvd, subscribed to meter.secret"
  grep -q "refused $b the notifications of meter.secret" "$TESTBED_WORK/bleadvd.log" || fail "the journal did not say B was refused meter.secret's notifications"
  echo "    each subscription listed with its own central and MTU; B refused meter.secret (journal)"
fi

echo "3. level=7 secret=9: all hear level; secret reaches A alone through its socket (on 5.66 it waits for B to leave)"
bleadvctl set meter level=7 secret=9
touch "$turn/set"
for central in a b c; do wait_for 30 "${central^^} to hear" "[ -e '$turn/$central-heard' ]" || true; done
for central in a b c; do so_far $central | grep "notified\|heard" | sed "s/^/    ${central^^}: /"; done
for central in a b c; do
  so_far $central | grep -q "notified $level: $(hex 7)" || fail "${central^^} did not hear level 7"
done
if ((sockets)); then
  so_far a | grep -q "notified $secret: $(hex 9)" || fail "A, the owner, did not hear secret 9 through its socket"
else
  # BlueZ 5.66 sends every subscriber alike: the change waits for B to leave, A's too.
  so_far a | grep -q "notified $secret: nothing" || fail "A heard secret 9 while B, bonded around bleadvd, was connected: BlueZ 5.66 would have sent it to B too"
fi
so_far b | grep -q "heard $secret: nothing" || fail "B, bonded around bleadvd, heard the secret: $(so_far b | grep "heard $secret")"
# B, bonded around bleadvd, is connected: the change of Value waits (bluetoothd would send it to
# B too); A has a socket, and heard it at once through it.
grep "meter.secret's change waits" "$TESTBED_WORK/bleadvd.log" | sed 's/^/    journal: /' || true

echo "4. level=42 for C alone"
status=0
out=$(bleadvctl set meter level=42 --central "$c" 2>&1) || status=$?
echo "    bleadvctl set --central $c: exit $status $out"
touch "$turn/for-c"
for central in a b c; do wait_for 30 "${central^^} to count" "[ -e '$turn/$central-counted' ]" || true; done
for central in a b c; do so_far $central | grep "count\|notified $level: $(hex 42)\|notified $level: nothing" | sed "s/^/    ${central^^}: /" || true; done
if ((sockets)); then
  ((status == 0)) || fail "set --central exited $status: $out"
  so_far c | grep -q "notified $level: $(hex 42)" || fail "C did not hear its value"
  for central in a b; do
    so_far $central | grep -q "count $level: 1, last $(hex 7)" || fail "${central^^} heard C's value: $(so_far $central | grep "count $level")"
  done
else
  ((status == 1)) || fail "set --central on BlueZ 5.66 exited $status, not 1 (refused by the stack): $out"
fi

echo "5. C leaves; A and B hear level=8"
wait "${runs[2]}" || true
wait_for 15 "C's link to end" "! bleadvctl centrals | grep -q '^$c '" || true
bleadvctl set meter level=8
touch "$turn/c-left"
for central in a b; do wait_for 30 "${central^^} to hear" "[ -e '$turn/$central-done' ]" || true; done
for central in a b; do so_far $central | grep "notified $level: $(hex 8)\|notified $level: nothing" | sed "s/^/    ${central^^}: /" || true; done
for central in a b; do
  so_far $central | grep -q "notified $level: $(hex 8)" || fail "${central^^} did not hear level 8 after C left"
done
bleadvctl centrals | sed 's/^/    centrals: /'
grep "unsubscribed meter" "$TESTBED_WORK/watch.out" | sed 's/^/    watch: /' || true
# BlueZ 5.82 closes another central's socket when one that is not bonded leaves: its device state
# goes, and clearing it calls the characteristic's CCC handler with no ATT instance, which
# removes the first socket in the list, whoever's it is (gatt-database.c: clear_ccc_state,
# ccc_write_cb, match_client_att). What goes to all still reaches that central (Value).
if ((sockets)) && grep -q "^unsubscribed meter.level by \($a\|$b\)$" "$TESTBED_WORK/watch.out"; then
  echo "    BlueZ closed the socket of a central still subscribed when C left (see above): it is listed unsubscribed, and heard level 8 all the same"
fi
wait "${runs[0]}" || true
wait "${runs[1]}" || true

echo "6. A comes back, bonded, and subscribes again: it hears level=9"
central_run a encrypt "subscribe:$level" "touch:$turn/a-again" "await:$turn/set-again" "notified:$level=$(hex 9)" > "$TESTBED_WORK/a2.lines" &
again=$!
wait_for 90 "A to subscribe again" "[ -e '$turn/a-again' ]" || fail "A did not come back: $(so_far a)"
sleep 1
bleadvctl set meter level=9
touch "$turn/set-again"
wait "$again" || true
cat "$TESTBED_WORK/a2.lines"
grep -q "notified $level: $(hex 9)" "$TESTBED_WORK/a2.lines" || fail "A, bonded, did not hear level 9 on its next link"
grep -E "GATT|subscri" "$TESTBED_WORK/bleadvd.log" | tail -n 20 | sed 's/^/    journal: /'
kill "$watch_pid" 2> /dev/null || true
stop_bleadvd
