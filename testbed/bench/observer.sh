#!/usr/bin/env bash
# How quickly hci1's observer (testbed/observer.py) hears BlueZ's own example-advertisement:
# 20 scans of up to 12 s each, one line per scan, then how many heard it. The figures of
# docs/RELIABILITY.md "The observer". Run by `make bench-observer`.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"
python3 -u /usr/share/doc/bluez-test-scripts/examples/example-advertisement --timeout 900 \
  > "$TESTBED_WORK/example.out" 2>&1 &
wait_for 20 "example-advertisement to register" 'grep -q "Advertisement registered" "$TESTBED_WORK/example.out"'
heard=0 total=0
for scan in $(seq 1 20); do
  start=$(date +%s%N)
  result=heard
  python3 "$TESTBED_ROOT/testbed/observer.py" --adapter hci1 --seconds 12 --until manufacturer=0xffff:00010203 > /dev/null \
    || result="NOT heard"
  took=$(( $(date +%s%N) - start ))
  [[ "$result" == heard ]] && heard=$((heard + 1)) total=$((total + took))
  echo "scan $scan: $result after $((took / 1000000)) ms"
done
echo "observer: $heard of 20 scans heard it, after $(( heard ? total / heard / 1000000 : 0 )) ms on average"
echo "reports hci1's controller received: $(python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 1 --reports | wc -l)"
