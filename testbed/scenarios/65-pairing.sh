#!/usr/bin/env bash
# testbed-timeout: 1200
# Pairing with bleadvd, as a central on a host stack of its own sees it: Google's Bumble owns
# hci1 through the HCI user channel (bluetoothd serves hci0 only; its one default agent would
# otherwise answer for both sides) and pairs with bleadvd's agent on hci0 with its own SMP.
# - an unpaired read of an encrypted characteristic: ATT Insufficient Encryption; a write too,
#   and nothing is written;
# - outside a window: the kernel refuses the bond (the adapter is not pairable);
# - a window of the default config (no `method`: passkey), the code `bleadvctl pair` printed
#   typed on the central: paired, the read works, bleadvctl pair exits 0, the window is closed
#   after its bond, `bleadvctl bonds` lists hci1;
# - the bond survives kill -9 of bluetoothd and a restart of bleadvd: the central encrypts with
#   its stored key and reads;
# - 1,000 writes without response on the encrypted link: Written signals, journal lines, CPU;
# - kill -9 of bluetoothd, quiet and during a flood: how long after the bus saw it go bleadvd
#   took its advertisement off air (dbus-monitor's timestamps);
# - passkey (after a reload): a central that asks for just works in the window is refused (a
#   downgrade), and the code `bleadvctl pair` prints, typed on the owner's central, pairs with
#   MITM protection and opens an authenticated characteristic; user nobody's watch and
#   dbus-monitor, running meanwhile, see no code; numeric comparison, both
#   sides showing one code and `bleadvctl pair` told on its standard input that they match;
# - just works, only with `method = "just-works"` in the config: a central with no code bonds;
# - a stranger's pairing flood with wrong codes, from an address of its own: each fails, its
#   attempts run out and its next request is refused, each logged with its address; nothing
#   is written; the owner's central then pairs in the same window with its code (#78 item 9);
# - `bleadvctl forget`: the bond is gone and the next read fails again; a bond bleadvd has no
#   record of making is left unless --any, and reads no secured value until root adopts it
#   (pair --adopt), nor is it notified of a secured change (which goes out once it left);
#   user nobody's status shows no secured value; nobody's bluetoothctl takes
#   the default agent and turns Pairable on (BlueZ's policy lets it): bleadvd turns Pairable off
#   again, saying so, and the central reads no secured value;
# - the owner's bond taken over: nobody removes it in BlueZ (bleadvd drops it from its record),
#   and, bleadvd stopped, takes the default agent, makes hci0 pairable and advertises it; a
#   central with the owner's address and no keys bonds through it: with bleadvd back, it reads
#   no secured value and hears no secured change;
# - Pairable is false after a reload that turns pairing off with a window open, after SIGTERM
#   with a window open, after SIGKILL once bleadvd starts again, and once the bleadvctl pair
#   that opened a window is killed.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

config="$TESTBED_WORK/pairing.toml"
write_config() {
  local extra=""
  # EXTRA=1: one characteristic more, a change of the lock service's table.
  [[ -z "${EXTRA:-}" ]] || extra='
[service.lock.characteristic.extra]
uuid = "6e400014-b5a3-f393-e0a9-e50e24dcca9e"
format = "uint8"
flags = ["read"]
security = "none"
value = 1
'
  # METHOD "default": no method key, what a config that says nothing pairs with (passkey).
  local method="method = \"$1\""
  [[ "$1" != default ]] || method=""
  cat > "$config" <<TOML
adapter = "hci0"

[pairing]
$method
attempts = ${2:-3}

[service.lock]
uuid = "6e400010-b5a3-f393-e0a9-e50e24dcca9e"

[service.lock.characteristic.state]
uuid = "6e400011-b5a3-f393-e0a9-e50e24dcca9e"
format = "utf8"
flags = ["read", "write", "notify"]
value = "locked"

[service.lock.characteristic.dimmer]
uuid = "6e400012-b5a3-f393-e0a9-e50e24dcca9e"
format = "uint8"
flags = ["read", "write-without-response"]
value = 0

[service.lock.characteristic.code]
uuid = "6e400013-b5a3-f393-e0a9-e50e24dcca9e"
format = "utf8"
flags = ["read"]
value = "1234"
security = "authenticated"
$extra
[advertisement.door]
local_name = "Lock"
services = ["lock"]
TOML
}
state=6e400011-b5a3-f393-e0a9-e50e24dcca9e
dimmer=6e400012-b5a3-f393-e0a9-e50e24dcca9e
code=6e400013-b5a3-f393-e0a9-e50e24dcca9e
keys="$TESTBED_WORK/central-keys.json"
# flood_record HH:MM:SS.N: what the record has of a flood since then: how many ATT Write
# Commands and ACL data packets each controller's host sent (<) and received (>), how many
# credits (Number of Completed Packets) each controller gave its host, and every read request
# and response, error and disconnection with its header (direction, controller, time).
flood_record() {
  record_since "$1" \
    | awk '/^[<>] / { header = $0; split(header, h, /[][]/)
                      if (/Number of Completed Packets/) credits[h[2]]++
                      if (/ACL Data (TX|RX)/) acl[substr(header, 1, 1) " " h[2]]++
                      next }
        /ATT: Write Command/ { count[substr(header, 1, 1) " " h[2]]++ }
        /ATT: (Read Request|Read Response|Error Response)|Disconnect/ { print header; print $0 }
        END { for (k in count) printf "ATT Write Commands %s: %d\n", k, count[k]
              for (k in acl) printf "ACL data packets %s: %d\n", k, acl[k]
              for (k in credits) printf "Number of Completed Packets events on %s: %d\n", k, credits[k] }' || true
}
# packets_lost_in_link RECORD: how many ACL data packets one side's host sent on the link
# that the other's host never received, both ways (flood_record's counts: hci1's host sends
# with <, hci0's receives with >, and the other way round).
packets_lost_in_link() {
  awk '/^ACL data packets/ { n[$4 " " $5] = $NF }
       END { print (n["< hci1:"] - n["> hci0:"]) + (n["< hci0:"] - n["> hci1:"]) }' <<< "$1"
}
# att_sent_by_hci0 HH:MM:SS.N: how many ATT PDUs hci0's host sent since then.
att_sent_by_hci0() {
  record_since "$1" | awk '/^[<>] / { sent = /^< ACL Data TX/ && /\[hci0\]/; next } sent && /ATT: / { n++ } END { print n + 0 }'
}
# central_or_again ARGS... STEP...: a run of the central; when hci0's host sent no ATT PDU on its
# link, once more on a new link, saying so. A link that comes up half at hci0's bluetoothd (its
# ATT socket taken before the kernel's Device Connected event, or the last link's end read
# after it: RELIABILITY, "half-made links") is answered by no one, and hci0's host ends it
# seconds later: CI of 1ec24ed, step 5, the central's discovery unanswered and the link ended
# 4 s later. bleadvd is asked nothing before bluetoothd answers a discovery from its own table.
central_or_again() {
  local started; started=$(date '+%H:%M:%S.%N')
  local out; out=$(central "$@")
  if grep -q "the central central's run ended" <<< "$out" && (($(att_sent_by_hci0 "$started") == 0)); then
    echo "$out"
    echo "    hci0's host sent no ATT PDU on that link (it came up half at hci0's bluetoothd; RELIABILITY); once more on a new link:"
    out=$(central "$@")
  fi
  echo "$out"
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
bonds() { bleadvctl bonds | tr '\n' ' '; }
# pair_window SECONDS OUT: bleadvctl pair in the background, its output in OUT.
pair_window() {
  : > "$2"  # here, not by the background job's redirection: that may come after the first look
  bleadvctl pair "$1" > "$2" 2>&1 &
  PAIR_PID=$!
  wait_for 10 "the window to open" "grep -q 'pairing window open' '$2' 2> /dev/null"
}
# reload_to METHOD [ATTEMPTS]: the config with another method, reloaded, and the agent
# registered anew for it (a window opened before that would be the old agent's).
# METHOD default is passkey.
reload_to() {
  local method=$1; [[ "$method" != default ]] || method=passkey
  local registered; registered=$(grep -c "agent registered for $method " "$TESTBED_WORK/bleadvd.log" || true)
  write_config "$@"
  bleadvctl reload
  wait_for 10 "the agent registered for $method" "[ \$(grep -c 'agent registered for $method ' '$TESTBED_WORK/bleadvd.log') -gt $registered ]"
}

fresh_bluetoothd
write_config default
central_address=$(adapter_address hci1)
# A bond a run before left (one that failed before its forget) is not this run's, and none this
# run makes outlives it, however it ends: with hci0's key for hci1's address, bluetoothd raises
# the security of hci1's next link (src/device.c, "Elevating security level since LTK is
# available"), hci1's BlueZ, which has no key, pairs anew, hci0 refuses outside a window and the
# link ends (Authentication Failure): 60's read through hci1's BlueZ failed so after 65 failed
# in step 5 on Debian 13 (CI of stop 73, a fresh clone's make test, a lane).
forget_central() {
  busctl call org.bluez /org/bluez/hci0 org.bluez.Adapter1 RemoveDevice o "/org/bluez/hci0/dev_${central_address//:/_}" 2> /dev/null || true
}
forget_central
on_exit forget_central
# The state directory of its own: the record of the bonds bleadvd's windows made. Neither it
# nor the central's keys are kept from a run before this one.
state_dir="$TESTBED_WORK/state"
rm -rf "$state_dir" "$keys"
# Nor any output of a run before: a look for a line must find this run's.
rm -f "$TESTBED_WORK"/pair*.out "$TESTBED_WORK"/vanish-*.out "$TESTBED_WORK"/flood2.out "$TESTBED_WORK"/nobody-*.out \
  "$TESTBED_WORK"/agent-bus.out "$TESTBED_WORK"/central.*
start_bleadvd "$config" --state-directory "$state_dir"
address=$(adapter_address)
echo "bleadvd on hci0 ($address); Bumble on hci1 ($central_address)"
start_central central 1 "$address" --keys "$keys"

echo "1, 2. unpaired: read and write of an encrypted characteristic; pairing outside a window"
out=$(central "read:$state" "write:$state=6f70656e" pair "read:$state")
echo "$out"
expect_line "read $state: ATT error INSUFFICIENT_ENCRYPTION" "$out"
expect_line "write $state: ATT error INSUFFICIENT_ENCRYPTION" "$out"
expect_line "pairing failed: ProtocolError ProtocolError(smp/PAIRING_NOT_SUPPORTED" "$out"
status=$(bleadvctl status --json 2>&1) || true
grep -q '"state": "locked"' <<< "$status" || fail "an unpaired write changed the value, or status does not show it: $(tr -s ' \n' ' ' <<< "$status")"
[[ -z "$(bonds)" ]] || fail "a bond outside a window: $(bonds)"

echo "2b. outside a window, pairing without the Bonding flag (which a non-bondable adapter's SMP lets through to the agent), by LE Secure Connections and by legacy pairing"
# The kernel's SMP (6.1, 6.12, 7.2 alike) refuses a request with the Bonding flag while the
# adapter is not bondable, and asks bluetoothd's agent for a just-works one without it
# (RequestAuthorization): bleadvd's agent must be what refuses it.
refused_before=$(grep -c "pairing: refused $central_address (just-works): no pairing window is open" "$TESTBED_WORK/bleadvd.log" || true)
for kind in "" --legacy; do
  out=$(central --no-bonding $kind pair "read:$state")
  echo "$out"
  grep -q "^paired" <<< "$out" && fail "an encrypted link without a window (no bonding $kind)"
  expect_line "read $state: ATT error INSUFFICIENT_ENCRYPTION" "$out"
done
refused=$(grep -c "pairing: refused $central_address (just-works): no pairing window is open" "$TESTBED_WORK/bleadvd.log" || true)
echo "    bleadvd's agent refused $((refused - refused_before)) of the 2"
((refused - refused_before == 2)) || fail "the agent was not asked for each: $(grep "pairing:" "$TESTBED_WORK/bleadvd.log" | tail -n 4)"
[[ -z "$(bonds)" ]] || fail "a bond outside a window: $(bonds)"

echo "3. a window of the default config (no method: passkey): the code bleadvctl pair printed, typed on the central"
# Windows here last minutes, not seconds: under emulation a run of the central takes seconds,
# and a window that ran out before the central asked is refused, rightly.
pair_window 120 "$TESTBED_WORK/pair1.out"
expect_line "pairing window open for 120 s (passkey); pair from the central now" "$(cat "$TESTBED_WORK/pair1.out")"
out=$(central --io passkey --code-from "$TESTBED_WORK/pair1.out" pair "read:$state")
echo "$out"
grep -q "PAIRING_NOT_SUPPORTED" <<< "$out" && grep -E "pairing: window" "$TESTBED_WORK/bleadvd.log" | sed 's/^/    journal: /'
expect_line "paired (passkey)" "$out"
expect_line "read $state: $(printf locked | od -An -tx1 | tr -d ' \n')" "$out"
wait "$PAIR_PID" || fail "bleadvctl pair did not exit 0: $(cat "$TESTBED_WORK/pair1.out")"
sed 's/^/    bleadvctl pair: /' "$TESTBED_WORK/pair1.out"
expect_line "$central_address: paired and bonded" "$(cat "$TESTBED_WORK/pair1.out")"
[[ "$(busctl get-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Pairable)" == "b false" ]] || fail "hci0 still pairable after the bond"
expect_line "$central_address" "$(bonds)"
echo "    bonds: $(bonds)"

echo "3b. a reload that changes a service (#66 item 6): the bonded central, subscribed to Service Changed, is told the handles to discover again"
# bluetoothd (src/gatt-database.c) indicates Service Changed over the range of each service
# removed and added to the centrals that enabled its indications (a bonded central's choice
# is kept across links); bleadvd registers every service anew when one changes.
turn="$TESTBED_WORK/service-changed"
extra=6e400014-b5a3-f393-e0a9-e50e24dcca9e  # EXTRA's characteristic
# service_changed_turn: the central encrypts and subscribes, the reload adds a characteristic,
# and the central's lines (what it heard) are in changed.lines; CHANGED_STARTED is its start.
service_changed_turn() {
  rm -rf "$turn"; mkdir -p "$turn"
  CHANGED_STARTED=$(date '+%H:%M:%S.%N')
  CHANGED_LOG_LINES=$(bleadvd_log_lines)
  central encrypt "subscribe:2a05" "touch:$turn/subscribed" "await:$turn/reloaded" "heard:2a05=15" \
    rediscover "handle:$extra" "read:$extra" > "$TESTBED_WORK/changed.lines" &
  local run=$!
  wait_for 60 "the central to subscribe to Service Changed" "[ -e '$turn/subscribed' ] || ! kill -0 $run" || true
  EXTRA=1 write_config default
  bleadvctl reload
  touch "$turn/reloaded"
  wait "$run" || true
  cat "$TESTBED_WORK/changed.lines"
}
service_changed_turn
# CI's run of the #79 landing (Debian 13, legacy controllers) saw the subscription cancelled
# once (ATT error CancelledError; 9 runs of 65 there after it passed): Bumble cancels a request
# whose link ended. bleadvd ends a link only when
# asked or by [centrals] (and says so); a link that ended otherwise ended below it. The record
# of its end is shown, and the step is made once more on a new link.
if grep -q "^    subscribe 2a05: ATT error .*the link had ended" "$TESTBED_WORK/changed.lines"; then
  ended=$(tail -n +"$((CHANGED_LOG_LINES + 1))" "$TESTBED_WORK/bleadvd.log" | grep "ending its link" || true)
  [[ -z "$ended" ]] || fail "bleadvd ended the central's link before its subscription was answered: $ended"
  echo "    the link ended before the subscription was answered, and bleadvd did not end it; the HCI record since the central started:"
  hci_since "$CHANGED_STARTED" | sed 's/^/    /' || true
  write_config default
  bleadvctl reload
  echo "    once more on a new link:"
  service_changed_turn
fi
ranges=$(sed -n 's/^    heard 2a05: //p' "$TESTBED_WORK/changed.lines")
[[ "$ranges" =~ ^[0-9a-f]{8} ]] || fail "the bonded central was told no Service Changed after a reload that added a characteristic: ${ranges:-no line}"
# Each value is two little-endian handles, the first and the last of the range.
# (#81 item 4) Then the central discovers again, as one told of a change does, finds the
# characteristic the reload added within a range it was told, and reads it.
handle=$(sed -n "s/^    handle $extra: 0x//p" "$TESTBED_WORK/changed.lines")
[[ -n "$handle" ]] || fail "the central did not find the added characteristic when it discovered again: $(grep -E "rediscover|handle" "$TESTBED_WORK/changed.lines")"
within=""
for range in ${ranges//,/ }; do
  first=$((16#${range:2:2}${range:0:2})) last=$((16#${range:6:2}${range:4:2}))
  echo "    Service Changed: handles 0x${range:2:2}${range:0:2}-0x${range:6:2}${range:4:2}"
  ((first <= 16#$handle && 16#$handle <= last)) && within=1
done
[[ -n "$within" ]] || fail "the added characteristic (handle 0x$handle) is in no range the central was told"
expect_line "read $extra: 01" "$(cat "$TESTBED_WORK/changed.lines")"
echo "    the added characteristic, at 0x$handle, is within a range told, and reads 01 after the discovery"
write_config default
bleadvctl reload

echo "4, 5. the bond survives kill -9 of bluetoothd and a restart of bleadvd; then 1,000 writes without response on the encrypted link"
restart_bluetoothd
wait_for 20 "the advertisement back on air" 'bleadvctl status --json | grep -q "\"state\": \"on\""'
out=$(central_or_again encrypt "read:$state")
echo "$out"
expect_line "read $state: $(printf locked | od -An -tx1 | tr -d ' \n')" "$out"
stop_bleadvd
start_bleadvd "$config" --state-directory "$state_dir"
[[ "$(busctl get-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Pairable)" == "b false" ]] || fail "hci0 pairable after bleadvd started"
bluetoothd_pid=$(pidof bluetoothd | awk '{print $1}')
# flood_run: the central's run of step 5 (the read before, the flood, the read after) in $out,
# with bleadvd's and bluetoothd's CPU, the journal and RSS as they were before it. The read
# after the flood waits until bleadvd takes no more of its writes: the central sends faster
# than bluetoothd takes them (under emulation, up to 1,300 a second), and the kernel drops
# what bluetoothd's ATT socket has no room for (L2CAP's basic mode has no flow control), a
# request among them if it comes while the queue is full. Captured (bluetoothd's debug lines,
# Debian 13, 4 runs): hci0's controller took the 1,000 writes and the read; bluetoothd's ATT
# socket gave it 390 to 821 of the writes and never the read, and the central's read timed
# out. Writes without response may be dropped; a request the kernel dropped is not bleadvd's.
flood_run() {
  ticks_before=$(ticks "$BLEADVD_PID"); bluetoothd_before=$(ticks "$bluetoothd_pid")
  lines_before=$(grep -c . "$TESTBED_WORK/bleadvd.log")
  rss_before=$(ps -o rss= -p "$BLEADVD_PID" | tr -d ' ')
  local turn="$TESTBED_WORK/flood-turn" attempt
  for attempt in 1 2; do
    rm -rf "$turn"; mkdir -p "$turn"
    flood_started=$(date '+%H:%M:%S.%N')
    central encrypt "read:$state" "flood:$dimmer=1000" "touch:$turn/flooded" "await:$turn/drained" "read:$dimmer" > "$turn/lines" &
    local run=$!
    wait_for 60 "the flood to be sent" "[ -e '$turn/flooded' ] || ! kill -0 $run" || true
    # Until bleadvd's journal has had no new write of the dimmer for 3 s (25 s at most: the
    # central waits 30 s for its turn).
    local last=-1 now settled=0 waited
    for waited in $(seq 50); do
      now=$(grep -c "lock.dimmer: .* wrote" "$TESTBED_WORK/bleadvd.log" || true)
      if [[ "$now" == "$last" ]]; then settled=$((settled + 1)); else settled=0; last=$now; fi
      ((settled < 6)) || break
      sleep 0.5
    done
    touch "$turn/drained"
    wait "$run" || true
    out=$(cat "$turn/lines")
    # Done unless the read failed on a link hci0's host answered nothing on.
    { grep -qE "^    read $dimmer: [0-9a-f]+$" <<< "$out" || (($(att_sent_by_hci0 "$flood_started") > 0)); } && break
    ((attempt == 1)) || break
    echo "$out"
    echo "    hci0's host sent no ATT PDU on that link (it came up half at hci0's bluetoothd; RELIABILITY); once more on a new link:"
  done
  echo "$out"
}
flood_run
# The emulated controllers give a host one ACL buffer (btdev: LE Read Buffer Size, 1 packet): a
# packet that leaves one host and never reaches the other takes, as far as CI's records show,
# the one credit with it, and the host queues the rest of the link's packets, a request or its
# response among them, for good (RELIABILITY, 65's failure in the emulated link). That is below
# bleadvd, which answers every request that reaches hci0 (or fails here). When the record shows
# such a loss, the value is read back on a new link, which starts with its credit back, without
# a flood: what is checked is the same (read back, in force and the journal agree). (On Debian
# 13 without extended advertising every flood of a day lost one: 2 in a lane, 3 of 3 new links
# with the flood made again in the next.)
readback=$out
if ! grep -qE "^    read $dimmer: [0-9a-f]+$" <<< "$out"; then
  echo "    the HCI record since the flood's central started (writes, ACL packets and credits counted, reads shown):"
  record=$(flood_record "$flood_started")
  tail -n 40 <<< "$record" | sed 's/^/    /'
  lost=$(packets_lost_in_link "$record")
  ((lost > 0)) || fail "the read after the flood got no answer, and the link lost no packet: $(grep -E "read ($state|$dimmer)" <<< "$out" | tr -s ' \n' ' ')"
  echo "    the emulated link lost $lost ACL packet(s) below bleadvd and the central's run waited behind them; read back on a new link:"
  readback=$(central encrypt "read:$dimmer")
  echo "$readback"
  grep -qE "^    read $dimmer: [0-9a-f]+$" <<< "$readback" || fail "the read on a new link after the flood got no answer: $(grep "read $dimmer" <<< "$readback")"
fi
expect_line "read $state: $(printf locked | od -An -tx1 | tr -d ' \n')" "$out"
expect_line "flood 1000 writes" "$out"
# Writes without response are not acknowledged: the link may drop one (the spec allows it), so
# what is checked is that the value a central reads back and the value in force (root's status
# shows it) are one value. The dimmer is secured: the journal says each write, never its value.
read_back=$((16#$(sed -nE "s/^    read $dimmer: ([0-9a-f]+)$/\1/p" <<< "$readback")))
sleep 0.3  # the last announcement comes within 100 ms
in_force=$(bleadvctl status --json | sed -nE 's/.*"dimmer": "([0-9]+)".*/\1/p')
taken=$(grep "lock.dimmer: .* wrote" "$TESTBED_WORK/bleadvd.log" | awk '{ n = 1 } /the newest of/ { for (i = 1; i < NF; i++) if ($i == "of") n = $(i + 1) } { sum += n } END { print sum }')
received=$(flood_record "$flood_started" | sed -n 's/^ATT Write Commands > hci0: //p')
echo "    read back $read_back, in force $in_force; $taken of 1,000 writes reached bleadvd; the HCI record has ${received:-no} at hci0" \
  "$( ((${received:-0} > ${taken:-0})) && echo "(the kernel dropped the rest: bluetoothd's ATT socket had no room for them)")"
[[ "$read_back" == "$in_force" ]] || fail "read back and in force differ"
! grep "lock.dimmer: .* wrote" "$TESTBED_WORK/bleadvd.log" | grep -qv "wrote a secured value" \
  || fail "the journal shows a secured value: $(grep "lock.dimmer: .* wrote" "$TESTBED_WORK/bleadvd.log" | grep -v "wrote a secured value" | head -n 1)"
echo "    bleadvd: $(( $(ticks "$BLEADVD_PID") - ticks_before )) ticks of CPU, bluetoothd $(( $(ticks "$bluetoothd_pid") - bluetoothd_before ));" \
  "$(( $(grep -c . "$TESTBED_WORK/bleadvd.log") - lines_before )) journal lines; RSS $rss_before -> $(ps -o rss= -p "$BLEADVD_PID" | tr -d ' ') KiB"

echo "5b. kill -9 of bluetoothd, quiet and during a flood: how long bleadvd takes to act on it"
# The bus's own record: bluetoothd's name going (NameOwnerChanged) and bleadvd's StateChanged
# for the advertisement it took off air, as dbus-monitor timestamps them; during the flood also
# the WriteValue calls bluetoothd sent, and bleadvd's Written signals (the last one after the
# name went tells how far behind bleadvd's handling of the writes was).
# vanish_record OUT: NameOwnerChanged to StateChanged in ms; WriteValue calls; Written after.
vanish_record() {
  awk '/member=NameOwnerChanged/ && !gone { split($2, t, "="); gone = t[2] }
       /member=StateChanged/ && gone && !acted { split($2, t, "="); acted = t[2] }
       /member=WriteValue/ { writes++ }
       /member=Written/ && gone && !acted { late++ }
       END { printf "bleadvd took its advertisement off air %.0f ms after the bus saw bluetoothd go; %d WriteValue calls; %d Written signals between\n", (acted - gone) * 1000, writes, late }' "$1"
}
# kill_bluetoothd_watched OUT COUNT: dbus-monitor into OUT; with COUNT > 0 a flood of COUNT writes
# without response runs first; kill -9 of bluetoothd; bleadvd back on air on a new one.
kill_bluetoothd_watched() {
  local out=$1 count=$2
  : > "$out"
  dbus-monitor --system "type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.bluez'" \
    "type='signal',interface='org.bleadvd.Advertiser1'" \
    "type='method_call',interface='org.bluez.GattCharacteristic1'" > "$out" 2>&1 &
  local monitor=$!
  sleep 0.5
  if ((count)); then
    local flood_started flood attempt
    for attempt in 1 2; do
      flood_started=$(date '+%H:%M:%S.%N')
      central encrypt "flood:$dimmer=$count" "read:$dimmer" > "$TESTBED_WORK/flood2.out" 2>&1 &
      flood=$!
      wait_for 90 "the flood to reach bleadvd" "[ \$(grep -c WriteValue '$out') -gt 300 ]" && break
      # The record of a failure in the emulated link (RELIABILITY, Not done yet): what the
      # central printed, its notes, and the HCI record since it started. Not explained yet
      # (a fresh clone of ee7b468: the central sent its 6,000 writes and none reached
      # bleadvd); it is made once more on a new link, and the second failure fails the step.
      sed 's/^/    the flood: /' "$TESTBED_WORK/flood2.out"
      tail -n 20 "$TESTBED_WORK/central.err" | sed 's/^/    central.err: /'
      echo "    the HCI record since the flood's central started:"; hci_since "$flood_started" | sed 's/^/    /'
      wait "$flood" 2> /dev/null || true
      ((attempt == 1)) || { kill "$monitor" 2> /dev/null; return 1; }
      echo "    the flood did not reach bleadvd in 90 s; once more on a new link:"
    done
  fi
  local vanished_before; vanished_before=$(grep -c "event: bluezVanished" "$TESTBED_WORK/bleadvd.log" || true)
  pkill -9 -x bluetoothd
  wait_for 20 "bleadvd to act on it" "[ \$(grep -c 'event: bluezVanished' '$TESTBED_WORK/bleadvd.log') -gt $vanished_before ]"
  sleep 1
  kill "$monitor" 2> /dev/null || true
  if ((count)); then wait "$flood" 2> /dev/null || true; fi
  fresh_bluetoothd hci0
  wait_for 30 "bleadvd back on air" 'bleadvctl status --json | grep -q "\"state\": \"on\""'
}
kill_bluetoothd_watched "$TESTBED_WORK/vanish-quiet.out" 0
echo "    quiet: $(vanish_record "$TESTBED_WORK/vanish-quiet.out")"
kill_bluetoothd_watched "$TESTBED_WORK/vanish-flood.out" 6000
echo "    during a flood of 6,000 writes without response: $(vanish_record "$TESTBED_WORK/vanish-flood.out")"
grep -m1 "flood 6000" "$TESTBED_WORK/flood2.out" | sed 's/^ */    the central sent: /'
# CI of stop 76 (a fresh clone of 1fe0abf, Debian 13): here bleadvctl bonds got no answer in
# 30 s, after bleadvd was back on air; not seen here since (RELIABILITY, Not done yet). How long it takes is
# said each run, with the lines bleadvd logs of a wait for its turn with BlueZ (one second or
# more); when it fails, what bleadvd logged meanwhile, once the turn it waited behind ended.
asked=$(date +%s.%N)
after_kill=$(bonds) || true
echo "    bleadvctl bonds answered in $(elapsed "$asked") s, after bleadvd was back on air"
if [[ -z "$after_kill" ]]; then
  wait_for 40 "bleadvd to say what held its turn" "grep -q 'bonds() waited' '$TESTBED_WORK/bleadvd.log'" || true
  tail -n 40 "$TESTBED_WORK/bleadvd.log" | sed 's/^/    log: /'
  fail "the bond went with bluetoothd, or bleadvctl bonds got no answer"
fi
grep -aE "for its turn with BlueZ|held the turn with BlueZ" "$TESTBED_WORK/bleadvd.log" | tail -n 4 | sed 's/^/    log: /' || true

echo "5c. secured values are root's and group bleadvd's: user nobody's status has none"
bleadvctl status --json | grep -q '"state": "locked"' || fail "root's status has no value for lock.state"
nobody_status=$(runuser -u nobody -- bleadvctl status --json)
grep -q '"locked"' <<< "$nobody_status" && fail "user nobody's status shows lock.state: $nobody_status"
echo "    root's status has lock.state, nobody's: $(grep -o '"values": {[^}]*}' <<< "$nobody_status" | head -n 1)"

echo "5d. forget leaves a bond bleadvd has no record of making; --any removes it"
grep -qx "$central_address" "$state_dir/bonds" || fail "the window's bond is not in $state_dir/bonds: $(cat "$state_dir/bonds" 2>&1)"
rm "$state_dir/bonds"
status=0; refusal=$(bleadvctl forget "$central_address" 2>&1) || status=$?
echo "    without the record: exit $status: $refusal"
((status == 1)) || fail "forget of a bond bleadvd did not make exited $status"
expect_line "$central_address" "$(bonds)"
# Secured values go to the centrals bonded in bleadvd's windows alone (#64 item 3): the same
# bond, no longer on record, reads nothing until root adopts it.
out=$(central encrypt "read:$state")
echo "$out"
grep -qE "read $state: ATT error INSUFFICIENT_AUTHORI" <<< "$out" || fail "a bond bleadvd has no record of read the secured value"
# Nor does it hear the secured value change: bluetoothd notifies every subscriber alike, so
# the change waits while that central is connected, and goes out once it left.
# notified_of WHAT NAME: the central, encrypted, subscribes to the state; root sets it to WHAT
# meanwhile; the central's lines in NAME.lines.
# A subscription that failed on a link to which hci0's host sent no ATT PDU (a half-made link,
# as in central_or_again) is made once more on a new link, the state first set to something else
# with no central there, so that the turn's set is a change again. Captured beside a busy core
# (2026-12-03, Debian 13): "subscribe: ATT error CancelledError", the link ended after 3.7 s and
# the set came after it, so nothing was held and the check below failed.
notified_of() {
  local turn="$TESTBED_WORK/notify-$2" run attempt started
  for attempt in 1 2; do
    rm -rf "$turn"; mkdir -p "$turn"
    started=$(date '+%H:%M:%S.%N')
    central encrypt "subscribe:$state" "touch:$turn/subscribed" "await:$turn/set" "notified:$state=$(printf '%s' "$1" | od -An -tx1 | tr -d ' \n')" \
      > "$TESTBED_WORK/$2.lines" &
    run=$!
    wait_for 60 "the central to subscribe" "[ -e '$turn/subscribed' ] || ! kill -0 $run" || true
    bleadvctl set lock "state=$1"
    touch "$turn/set"
    wait "$run" || true
    grep -q "subscribed $state" "$TESTBED_WORK/$2.lines" && break
    echo "    the subscription failed; the HCI record since the central started:"
    hci_since "$started" | head -n 40 | sed 's/^/    /'
    if ((attempt == 1)) && (($(att_sent_by_hci0 "$started") == 0)); then
      cat "$TESTBED_WORK/$2.lines"
      echo "    the subscription failed and hci0's host sent no ATT PDU on that link (it came up half; RELIABILITY); once more on a new link:"
      bleadvctl set lock "state=again"
      continue
    fi
    break
  done
  cat "$TESTBED_WORK/$2.lines"
}
notified_of open stranger-notify
grep -q "subscribed $state" "$TESTBED_WORK/stranger-notify.lines" || fail "the central bonded around bleadvd could not subscribe, so its not being notified shows nothing"
grep -q "notified $state: nothing in 10 s" "$TESTBED_WORK/stranger-notify.lines" \
  || fail "a central bonded around bleadvd was notified of the secured value"
wait_for 10 "the held change to go out once it left" "grep -q \"lock.state's held change went out\" '$TESTBED_WORK/bleadvd.log'" \
  || fail "the held change did not go out once the central left"
{ grep -E "lock.state's (change waits|held change)" "$TESTBED_WORK/bleadvd.log" || true; } | tail -n 2 | sed 's/^/    journal: /'
bleadvctl pair --adopt "$central_address" | sed 's/^/    /'
out=$(central encrypt "read:$state")
echo "$out"
expect_line "read $state: $(printf open | od -An -tx1 | tr -d ' \n')" "$out"
# Adopted, it hears the change (the check above can fail).
notified_of locked adopted-notify
expect_line "notified $state: $(printf locked | od -An -tx1 | tr -d ' \n')" "$(cat "$TESTBED_WORK/adopted-notify.lines")"
bleadvctl forget --any "$central_address"
[[ -z "$(bonds)" ]] || fail "forget --any left the bond: $(bonds)"

echo "5e. BlueZ's own open door (#64 item 3): user nobody's bluetoothctl takes the default agent and turns Pairable on; bleadvd turns it off again, and the central reads no secured value"
# Debian's bluetooth.conf lets every local user call anything of org.bluez. nobody's agent
# answers yes to whatever it is asked (a line each second).
(echo "agent NoInputNoOutput"; echo "default-agent"; echo "pairable on"; for _ in $(seq 40); do sleep 1; echo yes; done) \
  | runuser -u nobody -- bluetoothctl > "$TESTBED_WORK/nobody-bluetoothctl.out" 2>&1 &
nobody_ctl=$!
# bleadvd, whose agent is registered, owns Pairable: it turns it off again and says so.
wait_for 20 "bleadvd to see hci0 made pairable by another program" \
  "grep -q 'hci0 was made pairable outside a bleadvd pairing window' '$TESTBED_WORK/bleadvd.log'" \
  || fail "bleadvd did not notice Pairable turned on: $(tr -d '\r' < "$TESTBED_WORK/nobody-bluetoothctl.out" | tail -n 5)"
{ tr -d '\r' < "$TESTBED_WORK/nobody-bluetoothctl.out" | grep -oE "Agent registered|Default agent request successful|Changing pairable on succeeded" || true; } \
  | sed 's/^/    nobody: bluetoothctl: /'
{ grep "made pairable outside" "$TESTBED_WORK/bleadvd.log" || true; } | tail -n 1 | sed 's/^/    journal: /'
wait_for 5 "Pairable to be off again" "busctl get-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Pairable | grep -q false" \
  || fail "Pairable stayed on"
out=$(central pair "read:$state")
echo "$out"
kill "$nobody_ctl" 2> /dev/null || true; wait "$nobody_ctl" 2> /dev/null || true
grep -q "read $state: $(printf locked | od -An -tx1 | tr -d ' \n')" <<< "$out" && fail "a central bonded through nobody's door read the secured value"
if grep -q "^paired" <<< "$out"; then
  expect_line "read $state: ATT error INSUFFICIENT_AUTHORIZATION" "$out"
  { grep "GATT: refused" "$TESTBED_WORK/bleadvd.log" || true; } | sed 's/^/    journal: /' | tail -n 1
else
  echo "    (no bond was made through nobody's agent)"
fi
busctl set-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Pairable b false
bleadvctl forget --any "$central_address" 2> /dev/null || true

echo "5f. just works, only when the config says method = \"just-works\" (what anyone in range may use): a central with no code bonds"
rm -f "$keys"
reload_to just-works
pair_window 120 "$TESTBED_WORK/pair-jw.out"
out=$(central pair "read:$state")
echo "$out"
expect_line "paired (just-works)" "$out"
wait "$PAIR_PID" || fail "bleadvctl pair did not exit 0: $(cat "$TESTBED_WORK/pair-jw.out")"
sed 's/^/    bleadvctl pair: /' "$TESTBED_WORK/pair-jw.out"
expect_line "$central_address: pairing (just works)" "$(cat "$TESTBED_WORK/pair-jw.out")"

echo "5g. the owner's bond taken over (#78 item 2): user nobody removes it in BlueZ; bleadvd stopped, a central with the owner's address and no keys bonds through nobody's door; bleadvd back: no secured value, no secured change"
grep -qx "$central_address" "$state_dir/bonds" || fail "the window's bond is not in the record: $(cat "$state_dir/bonds" 2>&1)"
# Debian's bluetooth.conf lets every local user remove any device, and its bond, from bluetoothd.
runuser -u nobody -- busctl call org.bluez /org/bluez/hci0 org.bluez.Adapter1 RemoveDevice o "/org/bluez/hci0/dev_${central_address//:/_}"
wait_for 10 "bleadvd to drop the removed bond" \
  "grep -q 'pairing: bond with $central_address ended in BlueZ (removed): no longer admitted' '$TESTBED_WORK/bleadvd.log'" \
  || fail "bleadvd did not see the owner's bond removed by nobody"
{ grep "ended in BlueZ" "$TESTBED_WORK/bleadvd.log" || true; } | tail -n 1 | sed 's/^/    journal: /'
! grep -qx "$central_address" "$state_dir/bonds" 2> /dev/null || fail "the record still admits the removed bond: $(cat "$state_dir/bonds")"
# The attacker's central uses the owner's address (sent in the clear), without the owner's keys,
# and bonds through nobody's door while bleadvd is stopped (running, it shuts the door: 5e):
# nobody's bluetoothctl is the default agent, makes hci0 pairable and advertises it.
stop_bleadvd
rm -f "$keys"
(echo "agent NoInputNoOutput"; echo "default-agent"; echo "pairable on"; echo "advertise on"; for _ in $(seq 60); do sleep 1; echo yes; done) \
  | runuser -u nobody -- bluetoothctl > "$TESTBED_WORK/nobody-takeover.out" 2>&1 &
nobody_ctl=$!
wait_for 20 "nobody's bluetoothctl to make hci0 pairable and advertise" \
  "busctl get-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Pairable | grep -q true && busctl get-property org.bluez /org/bluez/hci0 org.bluez.LEAdvertisingManager1 ActiveInstances | grep -qv '^y 0$'" \
  || fail "nobody's bluetoothctl did not open the door: $(tr -d '\r' < "$TESTBED_WORK/nobody-takeover.out" | tail -n 5)"
out=$(central pair "touch:$TESTBED_WORK/takeover-paired")
echo "$out"
kill "$nobody_ctl" 2> /dev/null || true; wait "$nobody_ctl" 2> /dev/null || true
busctl set-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Pairable b false
expect_line "paired" "$out"
start_bleadvd "$config" --state-directory "$state_dir"
out=$(central encrypt "read:$state")
echo "$out"
grep -q "read $state: $(printf locked | od -An -tx1 | tr -d ' \n')" <<< "$out" && fail "a central with the owner's address, bonded through nobody's door, read the secured value"
expect_line "read $state: ATT error INSUFFICIENT_AUTHORI" "$out"
notified_of open takeover-notify
grep -q "subscribed $state" "$TESTBED_WORK/takeover-notify.lines" || fail "the taken-over bond could not subscribe, so its not being notified shows nothing"
grep -q "notified $state: nothing in 10 s" "$TESTBED_WORK/takeover-notify.lines" \
  || fail "a central with the owner's address, bonded through nobody's door, was notified of the secured value"
bleadvctl set lock state=locked
bleadvctl forget --any "$central_address" 2> /dev/null || true

echo "6. passkey: the code bleadvctl pair prints, typed on the central"
rm -f "$keys"
reload_to passkey 2
pair_window 120 "$TESTBED_WORK/pair2.out"
# Local users other than the one at the box: watch and dbus-monitor as nobody see no code.
runuser -u nobody -- bleadvctl watch > "$TESTBED_WORK/nobody-watch.out" 2>&1 &
nobody_watch=$!
runuser -u nobody -- dbus-monitor --system "interface='org.bleadvd.Advertiser1'" > "$TESTBED_WORK/nobody-monitor.out" 2>&1 &
nobody_monitor=$!
echo "6a. a downgrade in the passkey window: a central that asks for just works (no input, no output, no MITM) is refused"
out=$(central --io just-works pair "read:$code")
echo "$out"
grep -q "paired (just-works)" <<< "$out" && fail "a just-works bond in a passkey window"
expect_line "refused: it asks for just works" "$(cat "$TESTBED_WORK/pair2.out")"
grep -q "pairing: refused $central_address (just-works): it asks for just works" "$TESTBED_WORK/bleadvd.log" \
  || fail "the journal did not say the downgrade was refused"
[[ -z "$(bonds)" ]] || fail "a bond from the downgrade: $(bonds)"
rm -f "$keys"
dbus-monitor --system "path='/org/bleadvd/agent'" "interface='org.bluez.AgentManager1'" > "$TESTBED_WORK/agent-bus.out" 2>&1 &
monitor_pid=$!
echo "6b. the owner's central, typing the code, pairs in the same window"
out=$(central --io passkey --code-from "$TESTBED_WORK/pair2.out" pair "read:$code")
echo "$out"
kill "$monitor_pid" 2>/dev/null || true
if ! grep -q "paired (passkey)" <<< "$out"; then
  # What bluetoothd asked of the agent: how a failure here was understood (RELIABILITY).
  echo "---- the agent's calls on the bus"; grep -E "method call|error|string|uint32|object path" "$TESTBED_WORK/agent-bus.out" | head -40
fi
expect_line "paired (passkey)" "$out"
expect_line "read $code: $(printf 1234 | od -An -tx1 | tr -d ' \n')" "$out"
wait "$PAIR_PID" || fail "bleadvctl pair did not exit 0: $(cat "$TESTBED_WORK/pair2.out")"
sed 's/^/    bleadvctl pair: /' "$TESTBED_WORK/pair2.out"
code_shown=$(sed -nE 's/.*type ([0-9]{6}) on the central/\1/p' "$TESTBED_WORK/pair2.out")
# The code went to bleadvctl pair alone: the journal (group adm reads it) says a passkey was
# asked, never the passkey.
grep -q "asks to pair; its passkey went to bleadvctl pair" "$TESTBED_WORK/bleadvd.log" || fail "the journal did not say a passkey was asked"
! grep -qw "$code_shown" "$TESTBED_WORK/bleadvd.log" || fail "the journal has the passkey: $(grep -w "$code_shown" "$TESTBED_WORK/bleadvd.log")"
kill "$nobody_watch" "$nobody_monitor" 2> /dev/null || true
wait "$nobody_watch" "$nobody_monitor" 2> /dev/null || true
grep -q "$code_shown" "$TESTBED_WORK/nobody-watch.out" "$TESTBED_WORK/nobody-monitor.out" \
  && fail "user nobody saw the code: $(grep -h "$code_shown" "$TESTBED_WORK/nobody-watch.out" "$TESTBED_WORK/nobody-monitor.out")"
echo "    user nobody's watch printed $(grep -c . "$TESTBED_WORK/nobody-watch.out") line(s), its dbus-monitor $(grep -c 'member=Pairing' "$TESTBED_WORK/nobody-monitor.out") Pairing signal(s); no code"
sed 's/^/    nobody'"'"'s watch: /' "$TESTBED_WORK/nobody-watch.out"

echo "6c. numeric comparison: both sides show a code; bleadvctl pair is told they match"
bleadvctl forget "$central_address"
rm -f "$keys"
reload_to numeric-comparison 2
printf 'y\n' > "$TESTBED_WORK/yes"
: > "$TESTBED_WORK/pair4.out"
bleadvctl pair 120 < "$TESTBED_WORK/yes" > "$TESTBED_WORK/pair4.out" 2>&1 &
PAIR_PID=$!
wait_for 10 "the window to open" "grep -q 'pairing window open' '$TESTBED_WORK/pair4.out' 2> /dev/null"
out=$(central --io confirm pair "read:$code")
echo "$out"
expect_line "paired (confirm)" "$out"
expect_line "read $code: $(printf 1234 | od -An -tx1 | tr -d ' \n')" "$out"
wait "$PAIR_PID" || fail "bleadvctl pair did not exit 0: $(cat "$TESTBED_WORK/pair4.out")"
sed 's/^/    bleadvctl pair: /' "$TESTBED_WORK/pair4.out"
central_code=$(sed -nE 's/^    compare ([0-9]{6})$/\1/p' <<< "$out")
shown_code=$(sed -nE 's/.*does the central show ([0-9]{6})\?.*/\1/p' "$TESTBED_WORK/pair4.out")
[[ -n "$central_code" && "$central_code" == "$shown_code" ]] || fail "the central compared $central_code, bleadvctl pair showed $shown_code"
echo "    both sides showed $shown_code"

echo "7. a stranger's pairing flood with wrong codes, from an address of its own (#78 item 9): its 2 attempts run out, not the owner's; the owner's central then pairs in the same window"
bleadvctl forget "$central_address"
rm -f "$keys"
reload_to default 2
# Bumble's static random address: bleadvd sees a second central.
stranger=F0:F1:F2:F3:F4:F5
ticks_before=$(ticks "$BLEADVD_PID")
seen=$(grep -c . "$TESTBED_WORK/central.out")
pair_window 300 "$TESTBED_WORK/pair3.out"
for attempt in 1 2 3; do
  central --from-random --io passkey --code 1 pair "write:$state=6f70656e" > /dev/null
done
tail -n +"$((seen + 1))" "$TESTBED_WORK/central.out" | grep -E "connected to|pairing failed|write $state" | sed 's/^/    /'
[[ $(tail -n +"$((seen + 1))" "$TESTBED_WORK/central.out" | grep -c "pairing failed") -eq 3 ]] || fail "a pairing with a wrong code succeeded"
[[ $(tail -n +"$((seen + 1))" "$TESTBED_WORK/central.out" | grep -c "connected to $address from $stranger") -eq 3 ]] || fail "the stranger did not connect from $stranger"
bleadvctl status --json | grep -q '"state": "locked"' || fail "a write during the flood changed the value"
# A central that asks again failed its last attempt: logged then, or after 30 s without a bond
# (the last of the three asks no more).
wait_for 40 "the failed attempts logged" 'grep -qE "$stranger did not bond \((it asks again|no bond within 30 s)" "$TESTBED_WORK/bleadvd.log"'
grep -qF "pairing: refused $stranger (passkey): it took its 2 attempt(s) in this window already" "$TESTBED_WORK/bleadvd.log" \
  || fail "the stranger's third request was not refused: $(grep "pairing:" "$TESTBED_WORK/bleadvd.log" | tail -n 5)"
grep -E "pairing: (refused|$stranger did not bond|$stranger asks)" "$TESTBED_WORK/bleadvd.log" | tail -n 7 | sed 's/^/    journal: /'
echo "    bleadvd: $(( $(ticks "$BLEADVD_PID") - ticks_before )) ticks of CPU for the flood"
[[ -z "$(bonds)" ]] || fail "a bond from the flood: $(bonds)"
echo "7b. the owner's central, after the stranger's flood, types its code in the same window"
out=$(central --io passkey --code-from "$TESTBED_WORK/pair3.out" pair "read:$code")
echo "$out"
expect_line "paired (passkey)" "$out"
expect_line "read $code: $(printf 1234 | od -An -tx1 | tr -d ' \n')" "$out"
wait "$PAIR_PID" || fail "bleadvctl pair did not exit 0 after the owner's central: $(cat "$TESTBED_WORK/pair3.out")"
sed 's/^/    bleadvctl pair: /' "$TESTBED_WORK/pair3.out"
expect_line "$central_address: paired and bonded" "$(cat "$TESTBED_WORK/pair3.out")"

echo "8. forget: the bond is gone and the read fails again"
bleadvctl forget "$central_address"
rm -f "$keys"
out=$(central "read:$state")
echo "$out"
expect_line "read $state: ATT error INSUFFICIENT_ENCRYPTION" "$out"

echo "9. Pairable is off whatever ends a window: a reload that turns pairing off, SIGTERM, SIGKILL, its opener killed"
pairable() { busctl get-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Pairable; }
pair_window 120 "$TESTBED_WORK/pair5.out"
[[ "$(pairable)" == "b true" ]] || fail "hci0 not pairable with a window open"
write_config off
bleadvctl reload
status=0; wait "$PAIR_PID" || status=$?
sed 's/^/    bleadvctl pair: /' "$TESTBED_WORK/pair5.out"
((status == 1)) || fail "bleadvctl pair exited $status after a reload that turned pairing off"
[[ "$(pairable)" == "b false" ]] || fail "hci0 pairable after a reload that turned pairing off"
echo "    reload to method off: $(pairable)"
reload_to default
pair_window 120 "$TESTBED_WORK/pair6.out"
stop_bleadvd
wait "$PAIR_PID" 2> /dev/null || true
[[ "$(pairable)" == "b false" ]] || fail "hci0 pairable after SIGTERM with a window open"
echo "    SIGTERM with a window open: $(pairable)"
start_bleadvd "$config" --state-directory "$state_dir"
pair_window 120 "$TESTBED_WORK/pair7.out"
kill -9 "$BLEADVD_PID"
wait "$BLEADVD_PID" 2> /dev/null || true
kill "$PAIR_PID" 2> /dev/null || true
# bluetoothd itself makes the adapter not bondable once its default agent is gone
# (adapter_set_io_capability, AlwaysPairable unset); the next start keeps it so.
echo "    SIGKILL with a window open: $(pairable) once the agent's connection is gone"
start_bleadvd "$config" --state-directory "$state_dir"
[[ "$(pairable)" == "b false" ]] || fail "hci0 pairable after bleadvd started again"
echo "    started again: $(pairable)"
# The opener gone (its terminal closed, Ctrl-C, killed), no one sees the window's codes:
# bleadvd closes it when bleadvctl pair leaves the bus, whatever ended it.
pair_window 120 "$TESTBED_WORK/pair8.out"
kill -9 "$PAIR_PID"
wait "$PAIR_PID" 2> /dev/null || true
wait_for 10 "the window to close once bleadvctl pair left" '[[ "$(pairable)" == "b false" ]]' \
  || fail "hci0 still pairable 10 s after the bleadvctl pair that opened the window was killed"
grep -q "window closed: the bleadvctl pair that opened it left" "$TESTBED_WORK/bleadvd.log" || fail "bleadvd did not say why the window closed"
echo "    bleadvctl pair killed with a window open: $(pairable), and the journal says so"
