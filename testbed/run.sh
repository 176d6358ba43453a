#!/usr/bin/env bash
# Boots the BlueZ test bed VM once and runs scenario scripts in it.
#
#   testbed/run.sh SCENARIO.sh...     e.g. testbed/run.sh testbed/scenarios/*.sh
#
# The guest shares this machine's root file system read-only (writes go to a throw-away
# overlay), starts a system bus, two virtual controllers (hci0 advertises, hci1 listens) and
# bluetoothd -E, then runs each scenario as root. Exit code: 0 when every scenario passed, 1
# when one failed, 2 on a usage error, before testbed/setup.sh, or while another run is under way.
# Run testbed/setup.sh first. Set BLEADVD_TESTBED_MEMORY or _CPUS to size the VM.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testbed/common.sh
. "$here/common.sh"

(($#)) || { echo "usage: testbed/run.sh SCENARIO.sh..." >&2; exit 2; }
[[ -x "$TESTBED_VNG" && -s "$TESTBED_CACHE/kernel-version" ]] || {
  echo "testbed: not set up; run testbed/setup.sh first" >&2; exit 2; }

scenarios=()
for s in "$@"; do
  [[ -f "$s" ]] || { echo "testbed: no scenario $s" >&2; exit 2; }
  scenarios+=("$(cd "$(dirname "$s")" && pwd)/$(basename "$s")")
done

# Two runs at once would write the same console and result files (and load two VMs on the CPUs).
exec 9> "$TESTBED_CACHE/run.lock"
flock -n 9 || { echo "testbed: another test bed run is under way (lock $TESTBED_CACHE/run.lock)" >&2; exit 2; }

kver=$(cat "$TESTBED_CACHE/kernel-version")
started=$(date +%s)
echo "testbed: booting kernel $kver for ${#scenarios[@]} scenario(s)" >&2
# vng dies at once when standard input is closed (as in CI): give it /dev/null.
PATH="$TESTBED_CACHE/venv/bin:$PATH" "$TESTBED_VNG" \
  --run "$TESTBED_CACHE/kernel/boot/vmlinuz-$kver" --disable-kvm \
  --memory "${BLEADVD_TESTBED_MEMORY:-2G}" --cpus "${BLEADVD_TESTBED_CPUS:-2}" \
  --exec "$here/guest.sh ${scenarios[*]}" < /dev/null 2>&1 \
  | tee "$TESTBED_CACHE/console.log" \
  | grep -a --line-buffered -v -E '^\[ *[0-9]+\.[0-9]+\]' | tee "$TESTBED_CACHE/last-run.log"
status=${PIPESTATUS[0]}
# grep -a, here and above: a stray non-UTF-8 byte in the guest's output must not make grep
# take it for binary and hide the lines after it, the summary among them.
summary=$(grep -aE '^testbed: [0-9]+ passed, [0-9]+ failed' "$TESTBED_CACHE/last-run.log" | tail -n1 || true)
echo "testbed: VM run took $(("$(date +%s)" - started)) s" >&2
if [[ "$summary" != *" 0 failed"* ]]; then
  echo "---- kernel console lines about Bluetooth" >&2
  grep -aiE '^\[ *[0-9.]+\].*(bluetooth|hci|vhci)' "$TESTBED_CACHE/console.log" | tail -n 30 >&2 || true
fi
if [[ -z "$summary" ]]; then
  echo "testbed: the guest did not report results (exit $status)" >&2
  exit 1
fi
[[ "$summary" == *" 0 failed"* && $status -eq 0 ]]
