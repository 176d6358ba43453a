#!/usr/bin/env bash
# `make soak`: the seeded chaos soak (testbed/soak.py, testbed/systemd-scenarios/61-chaos-soak.sh)
# for long runs, on each stack of STACKS, after the package is installed.
#   SEED=N    the schedule's seed (default: drawn here and printed; the same on every stack)
#   STEPS=N   steps per stack (default 1000)
#   STACKS="trixie-legacy bookworm"   SUITE[-legacy]: the suite's image under systemd, with
#             controllers without extended advertising when -legacy
#   CENTRALS=1  connection cycles in the schedule (default): two Bumble centrals on a second
#             and a third controller; CENTRALS=0 for the schedule make test's 61 draws (its
#             failures print that way to repeat them)
#   HCI_FAULTS=1  the controllers are Bumble's (testbed/run.sh --bumble) and half the steps are
#             their faults (testbed/controllers.py: refuse-enable and fail-connection during a
#             connection cycle, sets-1, memory-full, drop-enable; not terminate: RELIABILITY); after each step
#             what hci0's controller sends is checked too (make soak-faults)
# Progress shows as it goes: every 10th step, on the console (and in .testbed-cache/console.log).
# A failure prints the seed and the shortest failing prefix: SEED=N STEPS=K runs it again.
set -euo pipefail
cd "$(dirname "$0")/.."
seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
steps=${STEPS:-1000}
stacks=${STACKS:-trixie-legacy bookworm}
centrals=${CENTRALS:-1}
status=0
for stack in $stacks; do
  suite=${stack%-legacy}
  options=(--systemd --stack "$suite")
  [[ "$stack" == *-legacy ]] && options+=(--legacy)
  [[ "$centrals" == 1 ]] && options+=(--controllers 3)
  [[ "${HCI_FAULTS:-0}" == 1 ]] && options+=(--bumble)
  echo "soak: $stack, seed $seed, $steps steps$( [[ "$centrals" == 1 ]] && echo ", connection cycles of two centrals among them")$( [[ "${HCI_FAULTS:-0}" == 1 ]] && echo ", the faults of Bumble's controllers among them")"
  # About 7 s a step under emulation (10 with connection cycles); the scenario's own limit is
  # for make test's 60.
  BLEADVD_TESTBED_APPEND="bleadvd_soak.seed=$seed bleadvd_soak.steps=$steps bleadvd_soak.centrals=$centrals bleadvd_soak.hci=${HCI_FAULTS:-0} bleadvd_testbed.timeout=$((steps * 30 + 600))" \
    testbed/run.sh "${options[@]}" testbed/systemd-scenarios/60-install-deb.sh testbed/systemd-scenarios/61-chaos-soak.sh \
    || status=1
done
exit $status
