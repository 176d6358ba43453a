# Helpers for test bed scenarios (sourced inside the VM). Scenarios run as root with
# TESTBED_ROOT (the repository) and TESTBED_WORK (a writable scratch folder) set.

# wait_for SECONDS WHAT CONDITION: polls CONDITION (shell code) every 0.2 s.
wait_for() {
  local seconds=$1 what=$2 condition=$3 i
  for ((i = 0; i < seconds * 5; i++)); do
    if eval "$condition"; then return 0; fi
    sleep 0.2
  done
  echo "timed out after ${seconds}s waiting for $what" >&2
  return 1
}

# elapsed START: seconds since START (a `date +%s.%N` value), to one decimal.
elapsed() {
  awk -v start="$1" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - start }'
}

# observe SECONDS: what a central on hci1 hears through bluetoothd in that time, one line per
# device. For "must not be heard" checks.
observe() {
  python3 "$TESTBED_ROOT/testbed/observer.py" --adapter hci1 --seconds "${1:-4}"
}

# observe_until SECONDS TEXT...: scans on hci1 until one device's line holds every TEXT (prints
# the lines, succeeds) or SECONDS pass (prints what was heard, fails).
observe_until() {
  local seconds=$1; shift
  local args=() text
  for text in "$@"; do args+=(--until "$text"); done
  python3 "$TESTBED_ROOT/testbed/observer.py" --adapter hci1 --seconds "$seconds" "${args[@]}"
}

# advertising_data [hciN]: every advertising data payload the host set on a controller,
# in hex, oldest first, read from the btmon capture.
advertising_data() {
  python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index "${1:-0}" --adv-data
}

# expect_line PATTERN TEXT: fails unless a line of TEXT contains PATTERN (fixed string).
expect_line() {
  if ! grep -qF -- "$1" <<< "$2"; then
    printf 'expected a line containing: %s\nin:\n%s\n' "$1" "$2" >&2
    return 1
  fi
}

# show_diagnostics: what a failure needs to be understood from the CI log alone.
show_diagnostics() {
  echo "---- bluetoothd log (last 80 lines)"
  tail -n 80 "$TESTBED_WORK/bluetoothd.log" 2>/dev/null
  echo "---- HCI capture, decoded (last 150 lines)"
  btmon -r "$TESTBED_WORK/hci.btsnoop" 2>/dev/null | tail -n 150
  echo "---- end of diagnostics"
}
