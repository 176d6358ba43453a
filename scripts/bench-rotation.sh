#!/usr/bin/env bash
# `make bench-rotation`: what sharing the slots costs bleadvd (#67), natively: the release
# bleadvd on a private dbus-daemon with BlueZ's stand-in (Tests/TestSupport/Peers/
# bluez_standin.py, which counts slots as BlueZ does; 5 here, a Raspberry Pi's onboard radio),
# for SECONDS each:
#   idle: 3 advertisements, everything fits: bus messages, CPU ticks, wake-ups (voluntary
#         context switches) of bleadvd;
#   rotating: 8 advertisements, one of priority 10, turns of 2 s: the same, and the
#         RegisterAdvertisement and UnregisterAdvertisement calls per turn,
# each also per hour at the default turn of 10 s. Every message counted is one dbus-monitor saw
# to or from bleadvd's connection.
#   scripts/bench-rotation.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
. scripts/private-bus.sh
start_bench_bus
start_bluez_standin "$work"
DBUS_SYSTEM_BUS_ADDRESS=$bus_address busctl --system call org.bluez /test test.StandIn SetFreeInstances sy hci0 5 > /dev/null

ticks() { awk '{ print $14 + $15 }' "/proc/$bleadvd_pid/stat"; }
wakeups() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$bleadvd_pid/status"; }
# measure NAME CONFIG: starts bleadvd on CONFIG, lets it settle 5 s, then counts for $seconds.
measure() {
  local name=$1 config=$2
  start_release_bleadvd "$work" "$config"
  sleep 5
  local unique; unique=$(bleadvd_unique_name)
  dbus-monitor --address "$bus_address" --profile "sender='$unique'" "destination='$unique'" > "$work/$name.bus" 2>/dev/null &
  local monitor=$!
  sleep 0.5
  local ticks_before wakeups_before; ticks_before=$(ticks); wakeups_before=$(wakeups)
  sleep "$seconds"
  local used=$(( $(ticks) - ticks_before )) woke=$(( $(wakeups) - wakeups_before ))
  kill "$monitor"; wait "$monitor" 2>/dev/null || true
  [[ -n "${BENCH_SHOW_BUS:-}" ]] && cat "$work/$name.bus" >&2
  local messages registers unregisters
  # The monitor's own NameAcquired and NameLost are not bleadvd's.
  messages=$(grep -E '^(mc|mr|sig|err)' "$work/$name.bus" | grep -vE $'\torg.freedesktop.DBus\tName(Acquired|Lost)$' | grep -c . || true)
  registers=$(awk '$NF == "RegisterAdvertisement"' "$work/$name.bus" | grep -c . || true)
  unregisters=$(awk '$NF == "UnregisterAdvertisement"' "$work/$name.bus" | grep -c . || true)
  echo "$name $seconds $messages $used $woke $registers $unregisters $(bleadvd_rss)"
  kill "$bleadvd_pid"; wait "$bleadvd_pid" 2>/dev/null || true
}

{ for name in alpha beta gamma; do printf '[advertisement.%s]\ntype = "broadcast"\nmanufacturer_data = { "0xFFFF" = "01" }\n' "$name"; done; } > "$work/idle.toml"
{
  printf '[slots]\nrotate_seconds = 2\n[advertisement.beacon]\npriority = 10\ntype = "broadcast"\nmanufacturer_data = { "0xFFFF" = "b0" }\n'
  for i in 1 2 3 4 5 6 7; do printf '[advertisement.ad%d]\ntype = "broadcast"\nmanufacturer_data = { "0xFFFF" = "a%d" }\n' "$i" "$i"; done
} > "$work/rotating.toml"

hz=$(getconf CLK_TCK)
echo "bleadvd $(.build/release/bleadvd --version 2>/dev/null || true); BlueZ's stand-in with 5 slots; $seconds s each, after 5 s to settle"
printf '%-9s %9s %12s %10s %9s %9s %11s %9s\n' case messages "CPU ticks" wake-ups turns register unregister "RSS KiB"
for name in idle rotating; do
  read -r _ _ messages used woke registers unregisters rss < <(measure "$name" "$work/$name.toml")
  turns=$([[ $name == rotating ]] && echo $(( seconds / 2 )) || echo 0)
  printf '%-9s %9d %12d %10d %9d %9d %11d %9d\n' "$name" "$messages" "$used" "$woke" "$turns" "$registers" "$unregisters" "$rss"
  if [[ $name == rotating ]]; then
    awk -v m="$messages" -v t="$used" -v r="$registers" -v u="$unregisters" -v s="$seconds" -v hz="$hz" -v turns="$turns" 'BEGIN {
      printf "per turn: %.2f register, %.2f unregister, %.1f messages, %.2f ms CPU\n", r / turns, u / turns, m / turns, t * 1000 / hz / turns
      printf "per hour at the default turn of 10 s (360 turns): %d messages, %.0f ms CPU\n", m / turns * 360, t * 1000 / hz / turns * 360 }'
  fi
done
