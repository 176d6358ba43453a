#!/usr/bin/env bash
# `make test`: every test, unit to end-to-end. The last line sums them up:
#   tests: N passed, N failed
# (the Swift tests and the test bed scenarios; a step that fails before reporting counts as one
# failure). Exit code 0 only when everything passed. Each step's time and counts go to
# .build/test-figures.tsv (and the machine it ran on, and whether it began from a fresh clone, in
# .build/test-figures.machine); a run changes no file git tracks: `make figures` writes a passing
# run's record into docs/TESTING.md (scripts/test-figures.sh): figures are never typed by hand.
#
# The test bed's four stages run in two lanes at once, each booting its own VMs: one VM under
# software emulation keeps about one of the machine's cores busy, so a second one uses the core
# the first leaves; with both, the cores are busy throughout (docs/TESTING.md, "Where the time
# goes"): a third lane would only slow the two.
# Everything both lanes need (the test bed's packages, kernels and images, the release build and
# both packages) is made before either starts: nothing is installed while a guest runs, nor is
# anything a guest runs built then (a library replaced under a guest sharing this machine's root
# crashes its programs); the documentation and the fuzz targets, which no guest uses, are built
# once the first lane is done. Each lane's output is kept and printed whole when both are done, the
# first lane's first.
set -uo pipefail
cd "$(dirname "$0")/.."

figures=.build/test-figures.tsv
# A fresh clone has no build yet: its figures are what a newcomer meets, a warm cache's are not.
if [[ -d .build/debug || -d .build/release ]]; then start="a warm build directory (.build/ already built)"; else start="a fresh clone"; fi
mkdir -p .build
{
  echo "machine=$(nproc) cores ($(sed -nE 's/^model name[[:space:]]*: (.*)/\1/p' /proc/cpuinfo | head -n1)), $(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "start=$start"
  echo "date=$(date -u +%Y-%m-%d)"
  echo "commit=$(git rev-parse --short HEAD 2> /dev/null || echo unknown)"
} > .build/test-figures.machine
printf 'step\tseconds\tpassed\tfailed\n' > "$figures"
started_all=$SECONDS

# step NAME COMMAND...: runs COMMAND, shows its output, and records its time and counts.
step() {
  local name=$1; shift
  printf '\n==> %s\n' "$name"
  local log started=$SECONDS passed=0 failed=0 counted=0 line
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  # Swift Testing: "Test run with N tests in M suites passed|failed ... with K issues".
  if line=$(grep -aE 'Test run with [0-9]+ tests? ' "$log" | tail -n1) && [[ -n "$line" ]]; then
    local total issues=0
    total=$(sed -E 's/.*Test run with ([0-9]+) tests?.*/\1/' <<< "$line")
    if [[ "$line" == *" failed "* ]]; then
      issues=$(grep -acE '^. Test "[^"]*" .*failed after' "$log" || true)
      ((issues > 0)) || issues=1
    fi
    passed=$((passed + total - issues)); failed=$((failed + issues)); counted=1
  fi
  # The test bed: "testbed: N passed, M failed", once per boot (a step may boot more than once).
  # A step without either (the docs, the fuzzing, the round trip through wpa_supplicant's
  # 1,000 cases) adds nothing when it passes and one failure when it fails.
  while read -r p f; do
    passed=$((passed + p)); failed=$((failed + f)); counted=1
  done < <(grep -aE '^testbed: [0-9]+ passed, [0-9]+ failed' "$log" | sed -E 's/^testbed: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/')
  if ((status != 0)); then
    echo "FAILED: $name (exit $status)"
    ((counted)) || failed=$((failed + 1))
  fi
  rm -f "$log"
  printf '%s\t%d\t%d\t%d\n' "$name" $((SECONDS - started)) "$passed" "$failed" >> "$figures"
}

step "dependencies" make --no-print-directory deps
# The test bed's packages, kernels, Python tools, emulator builds and Debian images take more of
# the network and of dpkg than of the CPU: they are made beside the steps that build and test
# on this machine (no guest boots before all of them are done). Its output is shown after them.
setup_log=$(mktemp)
(
  started=$SECONDS
  testbed/setup.sh bookworm trixie > "$setup_log" 2>&1
  echo "$? $((SECONDS - started))" > "$setup_log.done"
) &
setup=$!
step "unit, bus, daemon and CLI tests" make --no-print-directory unit-test
step "systemd unit file" make --no-print-directory systemd-check
step "the release build and the two packages under test" make --no-print-directory testbed-packages
wait "$setup"
read -r setup_status setup_seconds < "$setup_log.done" || setup_status=1
step "the test bed's packages, kernels and images (made beside the steps above in ${setup_seconds:-?} s)" \
  bash -c 'cat "$1"; exit "$2"' _ "$setup_log" "$setup_status"
rm -f "$setup_log" "$setup_log.done"

lanes=$(mktemp -d)
# live LANE: each lane's progress as it happens (its steps, boots, each scenario's PASS or FAIL
# with its time, its summaries), so that a run stopped by CI's time limit still shows where the
# time went; the lane's whole output stays in its file. (A guest under systemd writes its lines
# through a console: they end in CR LF. sed -u, not tr: tr holds its output until 4 KiB have
# come, and the first lines of a fresh clone's lanes came 10 minutes late.)
live() {
  sed -u 's/\r$//' | tee "$lanes/$1" \
    | grep -a --line-buffered -E '^(==> |PASS |FAIL |FAILED: |testbed: (booting|stack|VM run|FAILED|bluetoothd was gone|[0-9]+ passed))' \
    | while IFS= read -r line; do printf '[lane %s, %d s] %s\n' "$1" $((SECONDS - started_all)) "$line"; done
}
(
  export BLEADVD_TESTBED_LANE=1
  started=$SECONDS
  step "end-to-end tests in the VM test bed" make --no-print-directory testbed-test PREPARED=1
  step "Home Assistant's libraries in the VM test bed: BTHome decoded, Wi-Fi through Improv against an access point; centrals listed and disconnected" make --no-print-directory testbed-homeassistant-test PREPARED=1
  step "advertising sets on trixie with extended advertising: a scan response's fields and 124 bytes of data, judged by btmon and a scanner" make --no-print-directory testbed-sets-test PREPARED=1
  echo $((SECONDS - started)) > "$lanes/1.seconds"
) 2>&1 | live 1 &
first=$!
(
  export BLEADVD_TESTBED_LANE=2
  started=$SECONDS
  step "the package under systemd (PID 1) in the VM test bed, after 10 cycles of two centrals connecting, values read from programs" make --no-print-directory testbed-systemd-test PREPARED=1
  step "the other stacks in the VM test bed: trixie, controllers without extended advertising" make --no-print-directory testbed-stacks-test PREPARED=1
  echo $((SECONDS - started)) > "$lanes/2.seconds"
) 2>&1 | live 2 &
second=$!
printf '\n==> the test bed, in two lanes at once (their progress as it comes; each lane whole when both are done)\n'
# The documentation, the fuzz targets and the round trip through wpa_supplicant (on this
# machine, in a network namespace of its own) are built and run once either lane is done, on the
# core its guests leave while the other lane's last boot runs: before the lanes they kept both
# cores from the bed for 2.2 minutes, and which lane ends first varies from run to run (lane 1
# by 2 minutes in one fresh run of #67, lane 2 in the next). No guest uses what they build.
wait -n "$first" "$second"
(
  step "API documentation" make --no-print-directory docs
  step "fuzzing, a short run of each target" make --no-print-directory fuzz-smoke
  step "Improv's joins saved by the real wpa_supplicant and read back after a restart, 1,000 cases" \
    python3 scripts/wpa-roundtrip.py .build/release/bleadvd 1000
) 2>&1 | live 3
wait "$first" "$second"
printf '\n==> the test bed, each lane whole; then the documentation and the fuzzing\n'
cat "$lanes/1" "$lanes/2" "$lanes/3"
# Where the bed's time went: each lane's, and the five slowest scenarios (harness.sh's PASS and
# FAIL lines carry each scenario's seconds).
printf '\nthe test bed: lane 1 (end-to-end, Home Assistant) %s s, lane 2 (systemd, other stacks) %s s; the slowest scenarios:\n' \
  "$(cat "$lanes/1.seconds" 2> /dev/null || echo '?')" "$(cat "$lanes/2.seconds" 2> /dev/null || echo '?')"
cat "$lanes/1" "$lanes/2" | grep -aE '^(PASS|FAIL) .* \([0-9.]+ s\)$' \
  | sed -E 's/^(PASS|FAIL) (.*) \(([0-9.]+) s\)$/\3\t\1 \2/' | sort -t$'\t' -k1,1 -rn | head -n 5 \
  | awk -F'\t' '{ printf "  %6.0f s  %s\n", $1, $2 }'
# Every failed scenario again, last, with the lines it printed before it failed: a CI log cut
# in the middle keeps its tail.
grep -ahE '^(testbed: FAILED |testbed:   \| |FAILED: )' "$lanes/1" "$lanes/2" "$lanes/3"
rm -rf "$lanes"
printf '(wall clock)\t%d\t0\t0\n' $((SECONDS - started_all)) >> "$figures"

read -r passed failed < <(awk -F'\t' 'NR > 1 { p += $3; f += $4 } END { print p + 0, f + 0 }' "$figures")
printf '\ntests: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ] || exit 1
echo "each step's time is in $figures; make figures writes them into docs/TESTING.md"
