#!/usr/bin/env bash
# testbed-timeout: 600
# Values read when a central asks (#66 item 1), as two centrals on host stacks of their own see
# them: Bumble on hci1 (A) and on hci2 (B), bleadvd on hci0 serving `count`, read from a program
# that takes 1 s and prints how many times it ran (max_age 5 s), `slow`, read from one that
# sleeps 30 s (read_timeout 2 s), and `level`, a value centrals write.
# 1. A and B read `count` at the same instant: the program runs once, and both get 1.
# 2. A reads it again within max_age: nothing runs, and A gets 1 again.
# 3. Once max_age passed, A's read runs it again: 2.
# 4. A reads `slow`: ATT's error 0x80 (an application error) within 4 s, and the sleeper is
#    killed; meanwhile B's 20 writes to `level` are each answered within 1 s. The journal
#    says the timeout in one line.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

[[ -e /sys/class/bluetooth/hci2 ]] || fail "needs three controllers (testbed/run.sh --controllers 3)"
fresh_bluetoothd hci0
count=6e400031-b5a3-f393-e0a9-e50e24dcca9e slow=6e400032-b5a3-f393-e0a9-e50e24dcca9e
level=6e400033-b5a3-f393-e0a9-e50e24dcca9e
runs=$TESTBED_WORK/count.runs hold=$TESTBED_WORK/hold
rm -rf "$runs" "$hold" "$TESTBED_WORK/sleeper.pid"; mkdir -p "$hold"
cat > "$TESTBED_WORK/count-runs" <<EOF
#!/bin/sh
sleep 1
echo run >> '$runs'
wc -l < '$runs'
EOF
cat > "$TESTBED_WORK/sleeper" <<EOF
#!/bin/sh
echo \$\$ > '$TESTBED_WORK/sleeper.pid'
exec sleep 30
EOF
chmod 755 "$TESTBED_WORK/count-runs" "$TESTBED_WORK/sleeper"
cat > "$TESTBED_WORK/reads.toml" <<EOF
adapter = "hci0"

[advertisement.box]
local_name = "Reads"
services = ["pi"]

[service.pi]
uuid = "6e400030-b5a3-f393-e0a9-e50e24dcca9e"

[service.pi.characteristic.count]
uuid = "$count"
format = "uint8"
flags = ["read"]
read = "$TESTBED_WORK/count-runs"
max_age = 5

[service.pi.characteristic.slow]
uuid = "$slow"
format = "uint8"
flags = ["read"]
read = "$TESTBED_WORK/sleeper"
read_timeout = 2

[service.pi.characteristic.level]
uuid = "$level"
format = "uint8"
flags = ["read", "write"]
security = "none"
value = 0
EOF
start_bleadvd "$TESTBED_WORK/reads.toml"
address=$(adapter_address hci0)
start_central a 1 "$address"
start_central b 2 "$address"
ran() { [[ -e "$runs" ]] && wc -l < "$runs" || echo 0; }

echo "1-4. A and B connect; both read count at once; A again within max_age and after it; A reads slow while B writes"
before=$(relinks)
central_run a "read:$level" "touch:$hold/a-ready" "await:$hold/go" "timedread:$count" "timedread:$count" \
  "pause:5.5" "timedread:$count" "touch:$hold/slow" "timedread:$slow" > "$TESTBED_WORK/a.lines" &
a_run=$!
wait_for 60 "A's link" "[ -e '$hold/a-ready' ]" || fail "A did not connect and read level"
relinked "$before"
central_run b "read:$level" "touch:$hold/b-ready" "await:$hold/go" "timedread:$count" "await:$hold/slow" "pause:0.3" \
  "writes:$level=20" > "$TESTBED_WORK/b.lines" &
b_run=$!
wait_for 60 "B's link" "[ -e '$hold/b-ready' ]" || fail "B did not connect and read level"
touch "$hold/go"
wait "$a_run" "$b_run" || true
sed 's/^/    A: /' "$TESTBED_WORK/a.lines"
sed 's/^/    B: /' "$TESTBED_WORK/b.lines"
mapfile -t a_counts < <(sed -n "s/^ *read $count: \([0-9a-f]*\) in .*/\1/p" "$TESTBED_WORK/a.lines")
b_count=$(sed -n "s/^ *read $count: \([0-9a-f]*\) in .*/\1/p" "$TESTBED_WORK/b.lines")
echo "    A read count: ${a_counts[*]}; B: $b_count; the program ran $(ran) time(s)"

[[ "${a_counts[0]:-}" == 01 && "$b_count" == 01 ]] \
  || fail "1. two reads at once did not share one run (A got ${a_counts[0]:-nothing}, B got ${b_count:-nothing})"
[[ "${a_counts[1]:-}" == 01 ]] || fail "2. a read within max_age did not get the last answer (${a_counts[1]:-nothing})"
[[ "${a_counts[2]:-}" == 02 ]] || fail "3. a read after max_age did not run the program again (${a_counts[2]:-nothing})"
[[ "$(ran)" == 2 ]] || fail "the program ran $(ran) times for four reads (two at once, one within max_age): 2 expected"

slow_line=$(grep "^ *read $slow:" "$TESTBED_WORK/a.lines" || true)
[[ "$slow_line" =~ ATT\ error\ 0x80\ .*\ in\ ([0-9.]+)\ s ]] || fail "4. the read of slow did not get ATT's 0x80 (${slow_line:-no answer})"
seconds=${BASH_REMATCH[1]}
awk -v s="$seconds" 'BEGIN { exit !(s < 4) }' || fail "4. the error came after $seconds s (read_timeout 2 s)"
writes=$(grep "$level" "$TESTBED_WORK/b.lines" | grep -E "^ *(wrote|writes) " | sed 's/^ *//' || true)
[[ "$writes" =~ ^wrote\ 20\ .*slowest\ ([0-9.]+)\ s ]] || fail "4. B's writes during the slow read did not all go through (${writes:-none})"
awk -v s="${BASH_REMATCH[1]}" 'BEGIN { exit !(s < 1) }' || fail "4. a write of B's waited ${BASH_REMATCH[1]} s behind A's slow read"
sleeper=$(cat "$TESTBED_WORK/sleeper.pid" 2> /dev/null || echo none)
[[ "$sleeper" != none ]] && ! kill -0 "$sleeper" 2> /dev/null || fail "4. the sleeper ($sleeper) was not killed"
said=$(grep -c "pi.slow: .* did not finish within 2.0 seconds; killed" "$TESTBED_WORK/bleadvd.log" || true)
[[ "$said" == 1 ]] || fail "4. the journal said the timeout $said times: $(grep 'pi\.' "$TESTBED_WORK/bleadvd.log" | tail -n 3)"
echo "    slow: ATT error 0x80 in $seconds s; B's 20 writes meanwhile, slowest ${BASH_REMATCH[1]:-?} s; the sleeper killed; the journal:"
grep "pi\.slow" "$TESTBED_WORK/bleadvd.log" | sed 's/^/    /'
echo "    every check held"
