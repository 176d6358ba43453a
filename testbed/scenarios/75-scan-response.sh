#!/usr/bin/env bash
# A scan response with fields of its own, and advertising data past 31 bytes (#67):
# - BlueZ 5.80 and later: the scan response btmon saw given to hci0 is the one preview prints
#   (manufacturer data, the name, raw data, in BlueZ's order), hci1's scanner hears its
#   manufacturer data beside the advertising data's, and `bleadvctl set` changes it on air
#   (raw data in place; the manufacturer data by a new registration, which BlueZ needs
#   without --experimental);
# - older (Debian 12's 5.66): the advertisement with a scan response is not registered, status
#   says why and names the version, and nothing else on air changes;
# - with extended advertising and BlueZ 5.71 or later: 120 bytes of advertising data are given
#   to hci0 as preview prints them and hci1 hears them; without (btvirt -L), or with an older
#   bluetoothd, they are refused with the adapter's figure and never cut.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

release=$(/usr/libexec/bluetooth/bluetoothd --version 2> /dev/null || /usr/lib/bluetooth/bluetoothd --version)
minor=${release#5.}
# A scanner's controller dies on long extended advertising data in BlueZ's emulator before 5.84
# (testbed/bluez/btdev-ext-reports.patch): the bed's patched btvirt runs with three controllers.
# (The packaged btvirt is of the stack's BlueZ release.)
if [[ "${TESTBED_CONTROLLERS:-extended}" != legacy ]] && (( minor >= 71 && minor < 84 )) && [[ "$(btvirt_program)" != */btvirt-* ]]; then
  fail "long extended data on air would kill this emulator's controllers: run with --controllers 3 (the bed's patched btvirt)"
fi
long_hex=$(python3 -c 'print(bytes(range(1, 121)).hex())')
config="$TESTBED_WORK/scan-response.toml"
cat > "$config" <<TOML
adapter = "hci0"

[advertisement.beacon]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "0102" }

[advertisement.tag]
type = "broadcast"
local_name = "Tag-1"
manufacturer_data = { "0xFFFF" = "0a0b" }
[advertisement.tag.scan_response]
manufacturer_data = { "0x0059" = "0506" }
data = { "0x26" = "01" }

[advertisement.long]
type = "broadcast"
secondary_channel = "1M"
manufacturer_data = { "0x0075" = "$long_hex" }
TOML

preview=$(bleadvctl preview --config "$config")
sed 's/^/    /' <<< "$preview"
predicted_scan=$(bleadvctl preview --config "$config" tag | sed -nE 's/^  scan response: [0-9]+ of 31 bytes: ([0-9a-f]+)$/\1/p')
predicted_long=$(bleadvctl preview --config "$config" long | sed -nE 's/^  advertising data: [0-9]+ of 251 bytes: ([0-9a-f]+)$/\1/p')
[[ "$predicted_scan" == 05ff5900050606095461672d31022601 ]] \
  || fail "preview's scan response is $predicted_scan, not BlueZ's order (manufacturer data, name, raw data)"

from=$(date +%s.%N)
start_bleadvd "$config"
state() { advertisement_states | tr ' ' '\n' | sed -n "s/^$1=//p"; }
wait_for 30 "the beacon on air" '[[ $(state beacon) == on ]]' || { bleadvctl status; fail "the beacon is not on air"; }
sleep 2
status=$(bleadvctl status)
sed 's/^/    /' <<< "$status"

echo "scan response (BlueZ $release):"
if (( minor >= 80 )); then
  wait_for 20 "the tag on air" '[[ $(state tag) == on ]]' || fail "the tag is $(state tag), not on air"
  captured=$(python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 0 --scan-data)
  grep -qE " $predicted_scan\$" <<< "$captured" \
    || fail "btmon did not see preview's scan response $predicted_scan given to hci0; it saw: $(sort -u <<< "$captured" | tr '\n' ' ')"
  echo "    btmon: hci0 was given $predicted_scan, as preview printed"
  observe_until 30 "name=Tag-1" "manufacturer=0x0059:0506" "manufacturer=0xffff:0a0b" | sed 's/^/    hci1: /' \
    || fail "hci1 did not hear the scan response's manufacturer data beside the advertising data's"

  echo "set, raw scan response data (in place) and its manufacturer data (a new registration):"
  bleadvctl set tag scan_response.data.0x26=02
  bleadvctl set tag scan_response.manufacturer_data.0x0059=0708
  wait_for 10 "the new scan response given to hci0" \
    'python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 0 --scan-data | grep -q " 05ff5900070806095461672d31022602\$"' \
    || fail "hci0 was not given the scan response with 0708 and 02: $(python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 0 --scan-data | tail -n3 | tr '\n' ' ')"
  observe_until 30 "name=Tag-1" "manufacturer=0x0059:0708" | sed 's/^/    hci1: /' || fail "hci1 did not hear the changed scan response"
  grep -q "tag: BlueZ follows a change of ScanResponseManufacturerData only with --experimental; it needs a new registration; registering it again" \
    "$TESTBED_WORK/bleadvd.log" || fail "the log does not say why the tag was registered again"
else
  [[ $(state tag) == failed ]] || fail "on BlueZ $release the tag is $(state tag), not failed"
  expect_line "scan_response needs BlueZ 5.80 or later; bluetoothd on hci0 is older than 5.71 and would leave it out" "$status"
  if python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 0 --adv-data | grep -q "0a0b"; then
    fail "the tag's advertising data was given to hci0 although its scan response cannot be"
  fi
  echo "    refused, status names the version; hci0 was never given the tag"
fi

echo "advertising data of $(( ${#long_hex} / 2 + 4 )) bytes:"
if [[ "${TESTBED_CONTROLLERS:-extended}" != legacy ]] && (( minor >= 71 )); then
  wait_for 20 "the long advertisement on air" '[[ $(state long) == on ]]' || fail "the long advertisement is $(state long)"
  advertising_data_since "$from" 0 | grep -qE " $predicted_long\$" \
    || fail "btmon did not see preview's $(( ${#predicted_long} / 2 )) bytes given to hci0"
  echo "    btmon: hci0 was given the $(( ${#predicted_long} / 2 )) bytes preview printed"
  observe_until 30 "manufacturer=0x0075:$long_hex" > /dev/null || fail "hci1 did not hear the long manufacturer data whole"
  echo "    hci1 heard the manufacturer data whole ($(( ${#long_hex} / 2 )) bytes)"
else
  [[ $(state long) == failed ]] || fail "the long advertisement is $(state long), not failed"
  if [[ "${TESTBED_CONTROLLERS:-extended}" == legacy ]]; then
    expect_line "advertising data would be 124 of 31 bytes (93 over); hci0 has no extended advertising (its MaxAdvLen is 31)" "$status"
  else
    expect_line "advertising data would be 124 of 31 bytes (93 over); bluetoothd on hci0 is older than 5.71" "$status"
  fi
  if advertising_data_since "$from" 0 | grep -q "0102030405060708"; then fail "part of the long data was given to hci0"; fi
  echo "    refused with the adapter's figure; nothing of it given to hci0"
fi
observe_until 30 "manufacturer=0xffff:0102" > /dev/null || fail "the beacon beside them is not heard"
echo "    the beacon beside them is heard throughout"
stop_bleadvd
