#!/usr/bin/env bash
# `make test`: every test, unit to end-to-end, with one summary line at the end.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=0
passed=0
step() {
  local name=$1; shift
  printf '\n==> %s\n' "$name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}

step "dependencies" make --no-print-directory deps
step "unit and bus tests" make --no-print-directory unit-test
step "end-to-end tests in the VM test bed" make --no-print-directory testbed-test

printf '\nmake test: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
