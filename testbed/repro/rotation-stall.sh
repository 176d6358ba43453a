#!/usr/bin/env bash
# testbed-timeout: 3600
# The kernel's rotation of advertisements stalling after links end, on a controller without
# extended advertising (#50; 71 failed so on Debian 13, cycle 64): ROUNDS rounds (bleadvd_repro.rounds,
# default 60) of two centrals, Bumble on hci1 (A) and hci2 (B), against bleadvd on hci0 with a
# BTHome sensor and a connectable gateway. A connects, B connects about a turn (2 s) later, so
# that the two links may come from different advertisements; after a random pause (0-2 s) A's
# link ends, and B's 0-100 ms after it (71's links ended 58 ms apart in the cycle that failed);
# then a scan from hci2 (up to 6 s: three turns) must hear BTHome.
# Run it with --legacy (the kernel's own rotation): without extended advertising the kernel
# shows its advertisements in turn, 2 s each, from a timer (hci_sync.c: adv_timeout_expire).
# Kernel probes (tracefs) record, in each round, the disconnects (hci_disconn_complete_evt),
# each turn's end (adv_timeout_expire_sync and the instance it ends), and each turn scheduled
# (hci_schedule_adv_instance_sync and its instance). A turn's end that schedules no next turn
# is the stall's mark (or one scheduled 0.3 s or more later: bleadvd's refresh, 0.5 s after a
# link's end, arms the turns again): it is counted, and a round whose scan missed BTHome prints
# the probes' lines around it.
#   BLEADVD_TESTBED_APPEND="bleadvd_repro.rounds=60" testbed/run.sh --systemd --stack trixie \
#     --legacy --controllers 3 testbed/repro/rotation-stall.sh
set -eu
. "$TESTBED_ROOT/testbed/lib.sh"
export PATH="$TESTBED_BUILD/release:$PATH"  # as in testbed/scenarios/

rounds=$(kernel_arg bleadvd_repro.rounds)
rounds=${rounds:-60}
[[ -e /sys/class/bluetooth/hci2 ]] || fail "needs three controllers (testbed/run.sh --controllers 3)"
tracing=/sys/kernel/tracing
[[ -e $tracing/kprobe_events ]] || mount -t tracefs nodev "$tracing"
echo > "$tracing/kprobe_events"
probe() { echo "$1" >> "$tracing/kprobe_events" 2> /dev/null || echo "    (no probe: $1)"; }
# x86-64: the arguments in di, si, dx. adv_timeout_expire_sync(hdev, data): data points at the
# instance whose turn ended; hci_schedule_adv_instance_sync(hdev, instance, force).
probe 'p:rotation/turn_ended adv_timeout_expire_sync instance=+0(%si):u8'
probe 'p:rotation/scheduled hci_schedule_adv_instance_sync instance=%si:u8'
probe 'r:rotation/schedule_returned hci_schedule_adv_instance_sync ret=$retval:s32'
probe 'p:rotation/disconnected hci_disconn_complete_evt'
probe 'p:rotation/advertising_enabled hci_enable_advertising_sync'
echo 1 > "$tracing/events/rotation/enable"
echo > "$tracing/trace"

fresh_bluetoothd hci0
config="$TESTBED_ROOT/testbed/configs/sensor-beside-lamp.toml"
start_bleadvd "$config"
address=$(adapter_address hci0)
start_central a 1 "$address"
start_central b 2 "$address"
hold=$TESTBED_WORK/hold
rm -rf "$hold"; mkdir -p "$hold"

# stalls_in FILE: the turns in the probes' FILE that ended and scheduled none after them
# before the next turn ended (or the file did), or scheduled the next 0.3 s or more later.
stalls_in() {
  awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { t = $i + 0; break } }
    / turn_ended:/ { if (open) n++; open = 1; since = t; next }
    / scheduled:/ { if (open && t - since >= 0.3) n++; open = 0 }
    END { print n + open }' "$1"
}
stalled=0 marks=0
declare -A counted
for ((i = 1; i <= rounds; i++)); do
  echo > "$tracing/trace"
  central_run a "touch:$hold/a-$i" "await:$hold/go-a-$i" > "$TESTBED_WORK/a.lines" &
  a_run=$!
  wait_for 60 "A's link in round $i" "[ -e '$hold/a-$i' ]" || fail "round $i: A did not connect"
  sleep 2
  central_run b "touch:$hold/b-$i" "await:$hold/go-b-$i" > "$TESTBED_WORK/b.lines" &
  b_run=$!
  wait_for 60 "B's link in round $i" "[ -e '$hold/b-$i' ]" || { touch "$hold/go-a-$i" "$hold/go-b-$i"; fail "round $i: B did not connect beside A"; }
  sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", r % 200 / 100 }')"
  touch "$hold/go-a-$i"
  sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", r % 100 / 1000 }')"
  touch "$hold/go-b-$i"
  wait "$a_run" || true
  wait "$b_run" || true
  ended=$(sed -n 's/.*disconnected at //p' "$TESTBED_WORK/a.lines" "$TESTBED_WORK/b.lines" | sort -n | tr '\n' ' ')
  central_run b --no-link "scan:6/0.25/16d2fc" > "$TESTBED_WORK/scan.lines"
  cat "$tracing/trace" > "$TESTBED_WORK/probes-$i"
  round_marks=$(stalls_in "$TESTBED_WORK/probes-$i")
  marks=$((marks + round_marks))
  for event in turn_ended scheduled disconnected; do
    counted[$event]=$(( ${counted[$event]:-0} + $(grep -c " $event:" "$TESTBED_WORK/probes-$i" || true) ))
  done
  if grep -q 16d2fc "$TESTBED_WORK/scan.lines"; then
    echo "round $i: BTHome heard after the links ended ($ended); turns that scheduled none: $round_marks"
  else
    stalled=$((stalled + 1))
    echo "round $i: BTHome NOT heard in 6 s after the links ended ($ended); turns that scheduled none: $round_marks"
    grep -E "turn_ended|scheduled|returned|disconnected|advertising_enabled" "$TESTBED_WORK/probes-$i" | awk 'NR <= 60' | sed 's/^/    probe: /'
    record_since "$(date -d "@${ended%% *}" '+%H:%M:%S.%N' 2> /dev/null || date '+%H:%M:%S')" \
      | grep -E "LE Set Advertising (Data|Enable)|Advertising: (En|Dis)|Disconnect" | awk 'NR <= 30' | sed 's/^/    hci: /' || true
    grep -iE "rotation|registering|refresh" "$TESTBED_WORK/bleadvd.log" | tail -n 5 | sed 's/^/    bleadvd: /' || true
  fi
done
echo "$stalled of $rounds rounds: BTHome not heard in 6 s after the links; turns that ended scheduling none: $marks"
echo "the probes counted ${counted[turn_ended]:-0} turns ended, ${counted[scheduled]:-0} turns scheduled, ${counted[disconnected]:-0} disconnects"
