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
# 5. C leaves: A and B still hear the next value.
# 6. A leaves and comes back (bonded, encrypted, subscribing again, as a phone does): it hears
#    the next value (bluetoothd kept its notifications on, and gives it no socket on this link:
#    Value carries what goes to all).
# On BlueZ before 5.69 (Debian 12's 5.66), bluetoothd sends every subscriber alike: step 2 lists
# subscriptions as BlueZ's StartNotify gives them, and step 4 is refused; the scenario says so.
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
  grep -q "^paired" "$TESTBED_WORK/$central-pair.lines" || fail "${central^^} did not pair"
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
  wait_for 90 "${name^^} to subscribe" "[ -e '$turn/$name-subscribed' ]" || fail "${name^^} did not connect and subscribe: $(cat "$TESTBED_WORK/$name.lines")"
  relinked "$before"
}

echo "2. the three connect together, each with its own MTU, and subscribe"
connect a encrypt "mtu:247" "subscribe:$level" "subscribe:$secret" "touch:$turn/a-subscribed" \
  "await:$turn/set" "notified:$level=$(hex 7)" "notified:$secret=$(hex 9)" "touch:$turn/a-heard" \
  "await:$turn/for-c" "count:$level=3" "touch:$turn/a-counted" \
  "await:$turn/c-left" "notified:$level=$(hex 8)" "touch:$turn/a-done"
connect b encrypt "mtu:100" "subscribe:$level" "subscribe:$secret" "touch:$turn/b-subscribed" \
  "await:$turn/set" "notified:$level=$(hex 7)" "heard:$secret=5" "touch:$turn/b-heard" \
  "await:$turn/for-c" "count:$level=3" "touch:$turn/b-counted" \
  "await:$turn/c-left" "notified:$level=$(hex 8)" "touch:$turn/b-done"
connect c "mtu:185" "subscribe:$level" "touch:$turn/c-subscribed" \
  "await:$turn/set" "notified:$level=$(hex 7)" "touch:$turn/c-heard" \
  "await:$turn/for-c" "notified:$level=$(hex 42)" "touch:$turn/c-counted"
sleep 2
listed=$(bleadvctl centrals)
echo "$listed" | sed 's/^/    centrals: /'
grep "subscribed meter" "$TESTBED_WORK/watch.out" | sed 's/^/    watch: /' || true
if ((sockets)); then
  for central in "$a:247:meter.level,meter.secret" "$b:100:meter.level" "$c:185:meter.level"; do
    IFS=: read -r -a part <<< "$central"
    who="${part[0]}:${part[1]}:${part[2]}:${part[3]}:${part[4]}:${part[5]}"
    line=$(grep "^$who " <<< "$listed") || fail "centrals does not list $who"
    [[ "$line" == *" mtu ${part[6]} "* && "$line" == *" subscribed ${part[7]}" ]] \
      || fail "centrals lists $who as [$line], not with MTU ${part[6]} and subscribed ${part[7]}"
  done
  for who in "$a" "$b" "$c"; do
    [[ $(watched "^subscribed meter.level by $who$") == 1 ]] || fail "watch did not name $who's subscription to meter.level"
  done
  [[ $(watched "^subscribed meter.secret by $a$") == 1 ]] || fail "watch did not name A's subscription to meter.secret"
  [[ $(watched "^subscribed meter.secret by $b$") == 0 ]] || fail "watch says B, bonded around bleadvd, subscribed to meter.secret"
  grep -q "refused $b the notifications of meter.secret" "$TESTBED_WORK/bleadvd.log" || fail "the journal did not say B was refused meter.secret's notifications"
  echo "    each subscription listed with its own central and MTU; B refused meter.secret (journal)"
fi

echo "3. level=7 secret=9: all hear level, A alone hears secret"
bleadvctl set meter level=7 secret=9
touch "$turn/set"
for central in a b c; do wait_for 30 "${central^^} to hear" "[ -e '$turn/$central-heard' ]" || true; done
grep -h "notified\|heard" "$TESTBED_WORK"/{a,b,c}.lines | sed 's/^/   /'
for central in a b c; do
  grep -q "notified $level: $(hex 7)" "$TESTBED_WORK/$central.lines" || fail "${central^^} did not hear level 7"
done
grep -q "notified $secret: $(hex 9)" "$TESTBED_WORK/a.lines" || fail "A, the owner, did not hear secret 9"
grep -q "heard $secret: nothing" "$TESTBED_WORK/b.lines" || fail "B, bonded around bleadvd, heard the secret: $(grep "heard $secret" "$TESTBED_WORK/b.lines")"
# B, bonded around bleadvd, is connected: the change of Value waits (bluetoothd would send it to
# B too); A has a socket, and heard it at once through it.
grep "meter.secret's change waits" "$TESTBED_WORK/bleadvd.log" | sed 's/^/    journal: /' || true

echo "4. level=42 for C alone"
status=0
out=$(bleadvctl set meter level=42 --central "$c" 2>&1) || status=$?
echo "    bleadvctl set --central $c: exit $status $out"
touch "$turn/for-c"
for central in a b c; do wait_for 30 "${central^^} to count" "[ -e '$turn/$central-counted' ]" || true; done
grep -h "count\|notified $level: $(hex 42)\|notified $level: nothing" "$TESTBED_WORK"/{a,b,c}.lines | sed 's/^/   /'
if ((sockets)); then
  ((status == 0)) || fail "set --central exited $status: $out"
  grep -q "notified $level: $(hex 42)" "$TESTBED_WORK/c.lines" || fail "C did not hear its value"
  for central in a b; do
    grep -q "count $level: 1, last $(hex 7)" "$TESTBED_WORK/$central.lines" || fail "${central^^} heard C's value: $(grep "count $level" "$TESTBED_WORK/$central.lines")"
  done
else
  ((status == 2)) || fail "set --central on BlueZ 5.66 exited $status, not 2: $out"
fi

echo "5. C leaves; A and B hear level=8"
wait "${runs[2]}" || true
wait_for 15 "C's link to end" "! bleadvctl centrals | grep -q '^$c '" || true
bleadvctl set meter level=8
touch "$turn/c-left"
for central in a b; do wait_for 30 "${central^^} to hear" "[ -e '$turn/$central-done' ]" || true; done
grep -h "notified $level: $(hex 8)\|notified $level: nothing" "$TESTBED_WORK"/{a,b}.lines | sed 's/^/   /'
for central in a b; do
  grep -q "notified $level: $(hex 8)" "$TESTBED_WORK/$central.lines" || fail "${central^^} did not hear level 8 after C left"
done
wait "${runs[0]}" || true
wait "${runs[1]}" || true

echo "6. A comes back, bonded, and subscribes again: it hears level=9"
central_run a encrypt "subscribe:$level" "touch:$turn/a-again" "await:$turn/set-again" "notified:$level=$(hex 9)" > "$TESTBED_WORK/a2.lines" &
again=$!
wait_for 90 "A to subscribe again" "[ -e '$turn/a-again' ]" || fail "A did not come back: $(cat "$TESTBED_WORK/a2.lines")"
sleep 1
bleadvctl set meter level=9
touch "$turn/set-again"
wait "$again" || true
cat "$TESTBED_WORK/a2.lines"
grep -q "notified $level: $(hex 9)" "$TESTBED_WORK/a2.lines" || fail "A, bonded, did not hear level 9 on its next link"
grep -E "GATT|subscri" "$TESTBED_WORK/bleadvd.log" | tail -n 20 | sed 's/^/    journal: /'
kill "$watch_pid" 2> /dev/null || true
stop_bleadvd
