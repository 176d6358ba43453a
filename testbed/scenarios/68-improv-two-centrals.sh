#!/usr/bin/env bash
# testbed-timeout: 600
# Improv's frames from two centrals at once (#49): Bumble on hci1 and on hci2 (run.sh
# --controllers 3), each on a host stack of its own, write Improv frames to bleadvd on hci0 in
# two pieces each, interleaved (A's first, B's first, A's second, B's second: each piece written
# with a response, the next central's waiting for it): A asks the device to identify itself, B sends Wi-Fi credentials. Each central's
# pieces are joined into its own frame: the identify program runs, the join program is given B's
# network and password, no frame is malformed. Before frames were joined per central, the two
# interleaved frames became one broken frame; before #50, B found nothing of bleadvd's on air
# while A was connected. Then (#64) the same two with authorization required: B, a stranger,
# writes credentials every 0.3 s while the owner runs bleadvctl improv authorize (refused,
# naming both) and then authorizes A by its address: only A's network is joined.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

[[ -e /sys/class/bluetooth/hci2 ]] || fail "needs three controllers (testbed/run.sh --controllers 3)"
command=00467768-6228-2272-4663-277478268003
identify=020002
credentials=010e04486f6d650868756e74657232329e  # "Home", "hunter22"

fresh_bluetoothd hci0 hci1 hci2
cat > "$TESTBED_WORK/identify" <<SH
#!/bin/sh
echo run >> "$TESTBED_WORK/identified"
SH
cat > "$TESTBED_WORK/join-wifi" <<SH
#!/bin/sh
printf '%s' "\$IMPROV_SSID" > "$TESTBED_WORK/joined-ssid"
cat > "$TESTBED_WORK/joined-password"
echo 192.168.4.2
SH
chmod +x "$TESTBED_WORK/identify" "$TESTBED_WORK/join-wifi"
rm -f "$TESTBED_WORK/identified" "$TESTBED_WORK/joined-ssid" "$TESTBED_WORK/joined-password"
config="$TESTBED_WORK/improv.toml"
cat > "$config" <<TOML
adapter = "hci0"

[improv]
join = "$TESTBED_WORK/join-wifi"
identify = ["$TESTBED_WORK/identify"]
authorization = "none"
device_name = "two-centrals"
TOML
start_bleadvd "$config"
address=$(adapter_address hci0)
a=$(adapter_address hci1) b=$(adapter_address hci2)

echo "1. two centrals, A on hci1 ($a) and B on hci2 ($b)"
start_central a 1 "$address"
start_central b 2 "$address"

echo "2. their frames in two pieces each, interleaved"
# Each reads Improv's state first (so that its services are discovered before its first piece),
# and they take turns by files: each piece follows the other central's last.
state=00467768-6228-2272-4663-277478268001
turn=$TESTBED_WORK/turn
rm -rf "$turn"; mkdir -p "$turn"
before=$(relinks)
pieces_began=$(date '+%H:%M:%S.%N')
central_run a "read:$state" "touch:$turn/a-connected" "await:$turn/b-ready" "write:$command=${identify:0:2}" "touch:$turn/a1" \
  "await:$turn/b1" "write:$command=${identify:2}" "touch:$turn/a2" > "$TESTBED_WORK/a.lines" &
a_run=$!
# B connects once Improv's advertisement is on air again beside A's link (relinked): the
# emulated controllers fail (legacy) or never complete (extended) a connection asked while
# nothing connectable is on air, where a radio keeps trying.
wait_for 60 "A's link" "[ -e '$turn/a-connected' ]"
relinked "$before"
central_run b "read:$state" "touch:$turn/b-ready" "await:$turn/a1" "write:$command=${credentials:0:16}" "touch:$turn/b1" \
  "await:$turn/a2" "write:$command=${credentials:16}" > "$TESTBED_WORK/b.lines"
wait "$a_run" || true
sed 's/^/    A:/' "$TESTBED_WORK/a.lines"; sed 's/^/    B:/' "$TESTBED_WORK/b.lines"
for central in a b; do
  [[ "$(grep -c "wrote $command" "$TESTBED_WORK/$central.lines")" == 2 ]] || fail "central ${central^^} did not write both its pieces"
  ! grep -q "timed out" "$TESTBED_WORK/$central.lines" || fail "central ${central^^} did not get its turns: $(grep "timed out" "$TESTBED_WORK/$central.lines")"
done
# The order hci0's host got the pieces in, as btmon decoded its ATT Write Requests.
interleaved="${identify:0:2} ${credentials:0:16} ${identify:2} ${credentials:16}"
received=$(record_since "$pieces_began" | awk -v pieces=" $interleaved " '
  /^[<>@=]/ { rx = /ACL Data RX/ && /\[hci0\]/; write = 0; next }
  rx && /ATT: Write Request/ { write = 1; next }
  write && /Data(\[[0-9]+\])?: / { write = 0; if (index(pieces, " " $NF " ")) { printf "%s%s", sep, $NF; sep = " " } }')
[[ "$received" == "$interleaved" ]] || fail "hci0 received the pieces as [$received] (btmon), not interleaved as [$interleaved]"
echo "    hci0 received the pieces interleaved, A, B, A, B (btmon): $received"

echo "3. each central's frame, whole"
wait_for 20 "the join program's run" "[ -s '$TESTBED_WORK/joined-password' ]" || true
grep "improv:" "$TESTBED_WORK/bleadvd.log" | sed 's/^/    journal: /'
grep -q "improv: $a asked the device to identify itself" "$TESTBED_WORK/bleadvd.log" || fail "A's identify frame was not taken"
grep -q "improv: $b sent Wi-Fi settings for \"Home\"" "$TESTBED_WORK/bleadvd.log" || fail "B's credentials were not taken"
[[ -s "$TESTBED_WORK/identified" ]] || fail "the identify program did not run"
[[ "$(cat "$TESTBED_WORK/joined-ssid" 2> /dev/null)" == Home && "$(cat "$TESTBED_WORK/joined-password" 2> /dev/null)" == hunter22 ]] \
  || fail "the join program was not given B's network and password"
! grep -qi "malformed\|invalid" "$TESTBED_WORK/bleadvd.log" || fail "a frame was taken as malformed"
echo "    the identify program ran; the join program was given \"Home\" and B's password; no frame malformed"
stop_bleadvd

echo "4. an authorization is the owner's central's: B, a stranger, loops credentials while the owner authorizes A (#64)"
# improv_frame SSID PASSWORD: Improv's Wi-Fi settings frame, in hex.
improv_frame() {
  python3 -c 'import sys
ssid, password = sys.argv[1].encode(), sys.argv[2].encode()
data = bytes([len(ssid)]) + ssid + bytes([len(password)]) + password
head = bytes([1, len(data)]) + data
print((head + bytes([sum(head) & 0xFF])).hex())' "$1" "$2"
}
sed -i 's/^authorization = "none"/authorization = "bleadvctl"/' "$config"
rm -f "$TESTBED_WORK/joined-ssid" "$TESTBED_WORK/joined-password"
start_bleadvd "$config"
rm -rf "$turn"; mkdir -p "$turn"
before=$(relinks)
# A connects (reading Improv's state, as a client does) and waits for B, then for the owner's
# authorization; B connects beside it and writes its credentials every 0.3 s, before, during
# and after the authorization, 30 times.
central_run a "read:$state" "touch:$turn/a-connected" "await:$turn/b-connected" "await:$turn/authorized" "pause:1" \
  "write:$command=$(improv_frame Owner hunter22)" "pause:3" > "$TESTBED_WORK/a4.lines" &
a_run=$!
wait_for 60 "A's link" "[ -e '$turn/a-connected' ]"
relinked "$before"
stranger=("read:$state" "touch:$turn/b-connected")
for _ in $(seq 30); do stranger+=("write:$command=$(improv_frame Stranger hunter22)" "pause:0.3"); done
central_run b "${stranger[@]}" > "$TESTBED_WORK/b4.lines" &
b_run=$!
wait_for 60 "B's link" "[ -e '$turn/b-connected' ]"
sleep 2
status=0
refusal=$(bleadvctl improv authorize 2>&1) || status=$?
echo "    bleadvctl improv authorize with both connected: exit $status: $refusal"
[[ $status == 2 && "$refusal" == *"$a"* && "$refusal" == *"$b"* ]] || fail "authorize did not refuse naming both centrals"
bleadvctl improv authorize "$a" | sed 's/^/    bleadvctl improv authorize A: /'
touch "$turn/authorized"
wait "$a_run" || true
wait "$b_run" || true
sed 's/^/    A:/' "$TESTBED_WORK/a4.lines"
echo "    B: $(grep -c "wrote $command" "$TESTBED_WORK/b4.lines") credential frames written, $(grep -c "ATT error" "$TESTBED_WORK/b4.lines" || true) refused by ATT"
wait_for 20 "the join program's run" "[ -s '$TESTBED_WORK/joined-ssid' ]" || true
grep "improv:" "$TESTBED_WORK/bleadvd.log" | sed 's/^/    journal: /' | awk 'NR <= 12'
(( $(grep -c "wrote $command" "$TESTBED_WORK/b4.lines") >= 20 )) || fail "the stranger wrote too few frames to count"
[[ "$(cat "$TESTBED_WORK/joined-ssid" 2> /dev/null)" == Owner ]] || fail "the join program was given \"$(cat "$TESTBED_WORK/joined-ssid" 2> /dev/null)\", not the owner's network"
! grep -q "sent Wi-Fi settings for \"Stranger\"" "$TESTBED_WORK/bleadvd.log" || fail "the stranger's credentials started a join"
grep -q "ignored $b's frame: the authorization is $a's" "$TESTBED_WORK/bleadvd.log" || fail "bleadvd did not say it ignored the stranger's frames"
echo "    the join program ran for A's network alone; every credential frame of B's was refused or ignored"
stop_bleadvd
