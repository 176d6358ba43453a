#!/usr/bin/env bash
# `make test`: every test, unit to end-to-end. The last line sums them up:
#   tests: N passed, N failed
# (the Swift tests and the test bed scenarios; a step that fails before reporting counts as one
# failure). Exit code 0 only when everything passed. Each step's time and counts go to
# .build/test-figures.tsv, and a run where everything passed writes them into the README
# (scripts/readme-figures.sh): its figures are this script's, never typed by hand.
set -uo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0
failed=0
figures=.build/test-figures.tsv
mkdir -p .build
printf 'step\tseconds\tpassed\tfailed\n' > "$figures"
step() {
  local name=$1; shift
  printf '\n==> %s\n' "$name"
  : > "$log"
  local started=$SECONDS before_passed=$passed before_failed=$failed
  "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]} counted=0 line
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
  while read -r p f; do
    passed=$((passed + p)); failed=$((failed + f)); counted=1
  done < <(grep -aE '^testbed: [0-9]+ passed, [0-9]+ failed' "$log" | sed -E 's/^testbed: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/')
  if ((status != 0)); then
    echo "FAILED: $name (exit $status)"
    ((counted)) || failed=$((failed + 1))
  fi
  printf '%s\t%d\t%d\t%d\n' "$name" $((SECONDS - started)) $((passed - before_passed)) $((failed - before_failed)) >> "$figures"
}

step "dependencies" make --no-print-directory deps
step "unit, bus, daemon and CLI tests" make --no-print-directory unit-test
step "systemd unit file" make --no-print-directory systemd-check
step "API documentation" make --no-print-directory docs
step "fuzzing, a short run of each target" make --no-print-directory fuzz-smoke
step "end-to-end tests in the VM test bed" make --no-print-directory testbed-test
step "the package under systemd (PID 1) in the VM test bed" make --no-print-directory testbed-systemd-test
step "the other stacks in the VM test bed: trixie, controllers without extended advertising" make --no-print-directory testbed-stacks-test

printf '\ntests: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ] || exit 1
scripts/readme-figures.sh "$figures"
