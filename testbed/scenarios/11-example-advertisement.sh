#!/usr/bin/env bash
# The bed works with BlueZ's own example-advertisement: hci1 hears its manufacturer data
# (0xFFFF: 00 01 02 03) and service data (9999: 00 01 02 03 04), and the HCI capture shows the
# same bytes in the advertising data the host gave hci0.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

python3 -u /usr/share/doc/bluez-test-scripts/examples/example-advertisement --timeout 30 \
  > "$TESTBED_WORK/example.out" 2>&1 &
example=$!
wait_for 20 "example-advertisement to register" 'grep -q "Advertisement registered" "$TESTBED_WORK/example.out"' \
  || { cat "$TESTBED_WORK/example.out"; exit 1; }

observe_until 30 "manufacturer=0xffff:00010203" "service_data=00009999-0000-1000-8000-00805f9b34fb:0001020304"

captured=$(advertising_data 0)
echo "advertising data set on hci0:"; echo "$captured"
# Manufacturer AD: length 7, type FF, company FFFF little endian, 00 01 02 03.
expect_line "07ffffff00010203" "$captured"
# Service data AD: length 8, type 16, UUID 9999 little endian, 00 01 02 03 04.
expect_line "0816999900010203" "$captured"
kill "$example" 2>/dev/null || true
