#!/usr/bin/env bash
# testbed-timeout: 1500
# The seeded chaos soak (testbed/soak.py) of the installed bleadvd under systemd: bluetoothd
# restarted, killed, restarted twice, stopped and started with bus activation in place; hci0
# powered off; the controllers removed and added; on, off, set and reload alone and during
# those; bleadvd restarted and killed. After every step: on hci0 exactly the advertisements
# wanted on, the GATT application once, `bleadvctl status` agreeing, nothing else exported.
# Steps: 8 (make soak runs 1,000; make test ran 15 until 2026-12-02, when its CI no longer
# finished within 90 minutes: 300 s of each of its lanes went to the two soaks); the seed is drawn anew each run and printed. `make soak
# SEED=N STEPS=N` sets both (the kernel command line's bleadvd_soak.seed and .steps). make
# soak's schedule also has connection cycles (bleadvd_soak.centrals=1, three controllers): two
# Bumble centrals connect, read, subscribe, are notified, write and leave, alone and during a
# fault; after each, a scan from hci2 hears every advertisement wanted and status shows the
# values written (testbed/soak.py).
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

# The package as 60 installed it, or installed here (make test's boot of Bumble's controllers
# runs the soak without 60's checks).
install_package
[[ "$(systemctl is-active bleadvd)" == active ]] || fail "bleadvd.service is $(systemctl is-active bleadvd) after the install"
seed=$(kernel_arg bleadvd_soak.seed)
seed=${seed:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
steps=$(kernel_arg bleadvd_soak.steps)
live=()
# make soak's long runs show their progress on the console as they go.
[[ -n "$steps" ]] && live=(--progress /dev/console)
steps=${steps:-8}
# make soak's connection cycles (bleadvd_soak.centrals=1): two Bumble centrals on hci1 and hci2.
centrals=()
if [[ "$(kernel_arg bleadvd_soak.centrals)" == 1 ]]; then
  [[ -e /sys/class/bluetooth/hci2 ]] || fail "connection cycles need three controllers (testbed/run.sh --controllers 3)"
  centrals=(--centrals "$(decoders_python)" --work "$TESTBED_WORK")
fi
# make soak-faults (bleadvd_soak.hci=1, Bumble's controllers): the controllers' own faults too.
hci=()
if [[ "$(kernel_arg bleadvd_soak.hci)" == 1 ]]; then
  bumble_controllers || fail "the controllers' faults need Bumble's controllers (testbed/run.sh --bumble)"
  hci=(--hci-faults --work "$TESTBED_WORK")
fi
python3 "$TESTBED_ROOT/testbed/soak.py" --seed "$seed" --steps "$steps" \
  "${live[@]}" "${centrals[@]}" "${hci[@]}"
