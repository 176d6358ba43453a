#!/usr/bin/env bash
# Boots the BlueZ test bed VM once and runs scenario scripts in it.
#
#   testbed/run.sh [--legacy] SCENARIO.sh...              e.g. testbed/run.sh testbed/scenarios/*.sh
#   testbed/run.sh --systemd [--stack STACK] [--legacy|--bumble] SCENARIO.sh...
#                                            e.g. testbed/run.sh --systemd testbed/systemd-scenarios/*.sh
#
# By default the guest shares this machine's root file system read-only (writes go to a
# throw-away overlay), starts a system bus, two virtual controllers (hci0 advertises, hci1
# listens) and bluetoothd -E by hand, then runs each scenario as root (testbed/guest.sh).
# With --systemd the guest boots the Debian image testbed/image.sh made for SUITE (bookworm,
# trixie or sid; default bookworm; trixie-arm64 for 64-bit Arm, as on a Raspberry Pi, under
# qemu-system-aarch64) on that suite's kernel, with systemd as PID 1 and the
# distribution's dbus.service and bluetooth.service (bluetoothd as the distribution starts it,
# without -E); it sees only this repository (at the same path, read-only) and runs the
# scenarios from testbed/systemd-guest.sh: testbed/systemd-scenarios/ install the package,
# testbed/scenarios/ run the release binaries. Its writes are thrown away.
# --legacy makes the two controllers without extended advertising (btvirt -L; they are LE-only
# too, where a Raspberry Pi's onboard radio keeps BR/EDR). --bumble makes them with a second
# implementation, Google Bumble's controller (testbed/controllers.py, through /dev/vhci), whose
# faults a scenario sets (lib.sh's controller_fault). --controllers 3 makes a third, hci2,
# for a second central beside hci1's; --controllers 4 a fourth, hci3, for a scanner kept on
# across what the centrals do (71 then times the advertisements back from the links' end).
# Exit code: 0 when every scenario passed, 1 when one failed, 2 on a usage error, before
# testbed/setup.sh, or while another run is under way in the same lane.
# Run testbed/setup.sh first. Set BLEADVD_TESTBED_MEMORY or _CPUS to size the VM,
# BLEADVD_TESTBED_LANE=NAME to run beside another run (this one's console and result files are
# then console-NAME.log and last-run-NAME.log in the cache), and BLEADVD_TESTBED_APPEND to add
# words to the guest's kernel command line (the soak's bleadvd_soak.seed= and .steps=,
# the repro's bleadvd_repro.rounds=, bleadvd_testbed.timeout=).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testbed/common.sh
. "$here/common.sh"

usage="usage: testbed/run.sh [--systemd [--stack bookworm|trixie|sid|SUITE-arm64]] [--legacy|--bumble] [--controllers 2|3|4] SCENARIO.sh..."
systemd=0 suite=bookworm controllers=extended count=2
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --systemd) systemd=1; shift ;;
    --stack) [[ "${2:-}" =~ ^(bookworm|trixie|sid)(-arm64)?$ ]] || { echo "$usage" >&2; exit 2; }; suite=$2; shift 2 ;;
    --legacy) controllers=legacy; shift ;;
    --bumble) controllers=bumble; shift ;;
    --controllers) [[ "${2:-}" =~ ^[234]$ ]] || { echo "$usage" >&2; exit 2; }; count=$2; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "$usage" >&2; exit 2; }
((systemd)) || [[ "$suite" == bookworm ]] || { echo "testbed: --stack $suite needs --systemd (only bookworm shares this machine's root)" >&2; exit 2; }
[[ -x "$TESTBED_VNG" && -s "$TESTBED_CACHE/kernel-version" ]] || {
  echo "testbed: not set up; run testbed/setup.sh first" >&2; exit 2; }

scenarios=()
for s in "$@"; do
  [[ -f "$s" ]] || { echo "testbed: no scenario $s" >&2; exit 2; }
  scenarios+=("$(cd "$(dirname "$s")" && pwd)/$(basename "$s")")
done
if ((systemd)); then
  image=$TESTBED_CACHE/systemd-$suite.img
  [[ -s "$image" ]] || { echo "testbed: no $suite image; run testbed/setup.sh $suite first" >&2; exit 2; }
  # The guest sees the repository only, and finds the scenarios by their paths in it.
  relative=()
  for s in "${scenarios[@]}"; do
    [[ "$s" == "$TESTBED_ROOT/"* && "$s" != *[,\ ]* ]] || {
      echo "testbed: a --systemd scenario must be in the repository, its path without spaces or commas: $s" >&2; exit 2; }
    relative+=("${s#"$TESTBED_ROOT/"}")
  done
  mode=(--systemd --root-disk "$image" --root-fstype ext4 --rw
        "--qemu-opts=-no-reboot -snapshot -virtfs local,path=$TESTBED_ROOT,mount_tag=bleadvd-repo,security_model=none,readonly=on"
        --append "panic=-1 bleadvd_testbed.repo=$TESTBED_ROOT bleadvd_testbed.stack=$suite bleadvd_testbed.controllers=$controllers bleadvd_testbed.count=$count bleadvd_testbed.scenarios=$(IFS=,; echo "${relative[*]}") ${BLEADVD_TESTBED_APPEND:-}")
else
  mode=(--exec "env TESTBED_CONTROLLERS=$controllers TESTBED_CONTROLLER_COUNT=$count $here/guest.sh ${scenarios[*]}"
        --qemu-opts=-no-reboot --append "panic=-1 ${BLEADVD_TESTBED_APPEND:-}")
fi

# Two runs at once would write the same console and result files: a second one at once is given
# a lane of its own (make test runs two), BLEADVD_TESTBED_LANE=NAME, with files of its own.
suffix=${BLEADVD_TESTBED_LANE:+-$BLEADVD_TESTBED_LANE}
[[ "$suffix" =~ ^(-[A-Za-z0-9]+)?$ ]] || { echo "testbed: BLEADVD_TESTBED_LANE is a word of letters and digits" >&2; exit 2; }
console=$TESTBED_CACHE/console$suffix.log last=$TESTBED_CACHE/last-run$suffix.log
exec 9> "$TESTBED_CACHE/run$suffix.lock"
flock -n 9 || { echo "testbed: another test bed run is under way in this lane (lock $TESTBED_CACHE/run$suffix.lock; BLEADVD_TESTBED_LANE gives another)" >&2; exit 2; }

if [[ "$suite" == bookworm ]]; then
  kver=$(cat "$TESTBED_CACHE/kernel-version")
  vmlinuz=$TESTBED_CACHE/kernel/boot/vmlinuz-$kver
else
  kver=$(cat "$TESTBED_CACHE/kernel-$suite/version")
  vmlinuz=$TESTBED_CACHE/kernel-$suite/vmlinuz-$kver
fi
arch=()
# qemu-system-aarch64, emulated, with an Arm busybox for vng's initramfs (testbed/setup.sh)
[[ "$suite" == *-arm64 ]] && arch=(--arch arm64 --busybox "$TESTBED_CACHE/busybox-arm64")
started=$(date +%s)
echo "testbed: booting $suite's kernel $kver$( ((systemd)) && echo " with systemd as PID 1")$( [[ $controllers == legacy ]] && echo ", controllers without extended advertising")$( [[ $controllers == bumble ]] && echo ", Bumble's controllers") for ${#scenarios[@]} scenario(s)" >&2
# vng dies at once when standard input is closed (as in CI): give it /dev/null. A guest kernel
# that panics (once in a day's boots under TCG: an int3 Oops in sched_clock_cpu at 1.9 s) reboots
# at once (panic=-1) and qemu then exits (-no-reboot): the run fails with the console's panic
# instead of hanging until CI's limit.
set +e  # vng's status is read below (a panicked guest's qemu exits non-zero)
PATH="$TESTBED_CACHE/venv/bin:$PATH" "$TESTBED_VNG" \
  --run "$vmlinuz" --disable-kvm "${arch[@]}" \
  --memory "${BLEADVD_TESTBED_MEMORY:-2G}" --cpus "${BLEADVD_TESTBED_CPUS:-2}" \
  "${mode[@]}" < /dev/null 2>&1 \
  | tee "$console" \
  | grep -a --line-buffered -v -E '^\[ *[0-9]+\.[0-9]+\]' | tee "$last"
status=${PIPESTATUS[0]}
set -e
# grep -a, here and above: a stray non-UTF-8 byte in the guest's output must not make grep
# take it for binary and hide the lines after it, the summary among them.
summary=$(grep -aE '^testbed: [0-9]+ passed, [0-9]+ failed' "$last" | tail -n1 || true)
echo "testbed: VM run took $(("$(date +%s)" - started)) s" >&2
if [[ "$summary" != *" 0 failed"* ]]; then
  echo "---- kernel console lines about Bluetooth" >&2
  grep -aiE '^\[ *[0-9.]+\].*(bluetooth|hci|vhci)' "$console" | tail -n 30 >&2 || true
fi
if [[ -z "$summary" ]]; then
  echo "testbed: the guest did not report results (exit $status)" >&2
  exit 1
fi
[[ "$summary" == *" 0 failed"* && $status -eq 0 ]]
