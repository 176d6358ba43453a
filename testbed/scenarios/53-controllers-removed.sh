#!/usr/bin/env bash
# The controllers removed and added back (btvirt, which holds both, stopped and started again),
# three times, two advertisements enabled and no adapter named: while no adapter is there
# bleadvd stays up and says why they are off; once the controllers are back both are registered
# on hci0 again and hci1 hears them.
# (btvirt makes both controllers in one process, so one cannot be removed alone here: where a
# removed adapter's advertisements go while another remains is tested against the BlueZ
# stand-in, not here.)
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

config="$TESTBED_WORK/two.toml"
cp "$TESTBED_ROOT/testbed/configs/53-two-broadcasts.toml" "$config"

open_scenario "$config" 2
for round in 1 2 3; do
  removed_at=$(date +%s.%N)
  remove_controllers
  wait_for 20 "bleadvd to say both wait" '[[ "$(bleadvctl status | awk '"'"'$1 == "first" || $1 == "second" { print $3 }'"'"' | sort -u)" == waiting ]]'
  kill -0 "$BLEADVD_PID" || fail "bleadvd exited when the controllers went"
  status=$(bleadvctl status | grep '^first')
  make_controllers || fail "the controllers did not come back"
  ready_at=$(date +%s.%N)
  power_on hci0 hci1 || fail "round $round: the controllers did not power on"
  wait_for 30 "both registered on hci0 again" '[[ "$(active_instances)" == 2 ]]' || { bleadvctl status >&2; fail "round $round: not registered again"; }
  echo "round $round: removed; bleadvd said: $(tr -s ' ' <<< "$status"); back after $(elapsed "$removed_at") s, both registered $(elapsed "$ready_at") s after hci0's manager answered"
done
observe_until 30 "manufacturer=0xffff:d1" > /dev/null || fail "hci1 does not hear first after the last round"
observe_until 30 "manufacturer=0xfffe:d2" > /dev/null || fail "hci1 does not hear second after the last round"
echo "hci1 hears both after the last round"
