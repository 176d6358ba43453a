#!/usr/bin/env bash
# The demo (`make demo`): bleadvd runs the example config (systemd/bleadvd.toml), bleadvctl
# switches advertisements, and the scanner on hci1 says what it hears. Also checks that
# `bleadvctl preview` predicts the bytes btmon captured, and that the iBeacon from the config
# is heard with exactly its manufacturer data.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

example="$TESTBED_ROOT/systemd/bleadvd.toml"
config="$TESTBED_WORK/demo.toml"
# The example as shipped, on the bed's advertising controller.
{ echo 'adapter = "hci0"'; grep -v '^# adapter' "$example"; } > "$config"

say() { printf '\n$ %s\n' "$*"; "$@"; }

say bleadvctl preview --config "$config" heart
start_bleadvd "$config"
say bleadvctl status
echo; echo "what hci1 hears:"
observe_until 30 "name=Thermo-1" "manufacturer=0xffff:01020304" "service_data=00009999-0000-1000-8000-00805f9b34fb:0001"

# preview's bytes are the bytes BlueZ gave the controller: on btvirt -L's controllers, which
# are LE-only, those of its "on an LE-only adapter" line when it prints one.
adv_bytes() { # adv_bytes NAME: the advertising data preview predicts for this bed's controllers
  local out le
  out=$(bleadvctl preview --config "$config" "$1")
  le=$(sed -nE 's/^  on an LE-only adapter: [0-9]+ of 31 bytes: ([0-9a-f]+) .*/\1/p' <<< "$out")
  if [[ "${TESTBED_CONTROLLERS:-extended}" == legacy && -n "$le" ]]; then echo "$le"; return; fi
  sed -nE 's/^  advertising data: [0-9]+ of 31 bytes: ([0-9a-f]+)$/\1/p' <<< "$out"
}
predicted=$(adv_bytes heart)
predicted_scan=$(bleadvctl preview --config "$config" heart | sed -nE 's/^  scan response: [0-9]+ of 31 bytes: ([0-9a-f]+)$/\1/p')
echo; echo "preview predicted: adv $predicted, scan response $predicted_scan"
captured=$(advertising_data 0)
captured_scan=$(python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 0 --scan-data)
echo "btmon captured:    adv $(tail -n1 <<< "$captured"), scan response $(tail -n1 <<< "$captured_scan")"
[[ -n "$predicted" ]] && grep -qE " $predicted\$" <<< "$captured" || { echo "preview's bytes were not captured" >&2; exit 1; }
[[ -n "$predicted_scan" ]] && grep -qE " $predicted_scan\$" <<< "$captured_scan" \
  || { echo "preview's scan response was not captured" >&2; exit 1; }

say bleadvctl off heart
say bleadvctl on door
say bleadvctl status
echo; echo "what hci1 hears:"
observe_until 30 "manufacturer=0x004c:0215e2c56db5dffb48d2b060d0f5a71096e000010002c5"
door=$(adv_bytes door)
grep -qE " $door\$" <<< "$(advertising_data 0)" || { echo "the iBeacon's bytes were not captured" >&2; exit 1; }
echo "btmon captured the iBeacon's preview bytes: $door"
stop_bleadvd
