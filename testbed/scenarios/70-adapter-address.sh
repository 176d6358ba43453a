#!/usr/bin/env bash
# testbed-timeout: 420
# The adapter by its address (#50): a config naming hci1's address puts the advertisement on
# hci1; then the controllers are made again with each other's address (btvirt with
# BTVIRT_SWAP, testbed/bluez/btdev-links.patch), as a Raspberry Pi's onboard radio and a USB
# dongle can come up in the other order after a reboot: the advertisement follows the address to
# hci0, and status names the adapter with its address each time.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

fresh_bluetoothd
chosen=$(adapter_address hci1)
config="$TESTBED_WORK/address.toml"
cat > "$config" <<TOML
adapter = "$chosen"

[advertisement.beacon]
local_name = "ByAddress"
TOML
start_bleadvd "$config"
detail() { bleadvctl status | awk '$1 == "beacon" { print $3, $7, $8, $9 }'; }

echo "1. adapter = \"$chosen\" (hci1's address)"
wait_for 20 "on air on hci1" '[[ "$(active_instances hci1)" == 1 ]]' || { bleadvctl status >&2; fail "not registered on hci1"; }
first=$(detail)
echo "    status: $first; ActiveInstances hci0 $(active_instances hci0), hci1 $(active_instances hci1)"
[[ "$first" == *"on hci1 ($chosen)" ]] || fail "status does not name hci1 with its address: $first"

echo "2. the controllers made again in the other order"
remove_controllers
make_controllers BTVIRT_SWAP=1 || fail "the controllers did not come back"
power_on $(controller_names) || fail "the controllers did not power on"
echo "    hci0 is now $(adapter_address hci0), hci1 $(adapter_address hci1)"
[[ "$(adapter_address hci0)" == "$chosen" ]] || fail "the swap did not give hci0 the address $chosen"
wait_for 30 "on air on hci0" '[[ "$(active_instances hci0)" == 1 ]]' || { bleadvctl status >&2; fail "did not follow its address to hci0"; }
second=$(detail)
echo "    status: $second; ActiveInstances hci0 $(active_instances hci0), hci1 $(active_instances hci1)"
[[ "$second" == *"on hci0 ($chosen)" ]] || fail "status does not name hci0 with its address: $second"
[[ "$(active_instances hci1)" == 0 ]] || fail "something of bleadvd's is registered on hci1"
heard=$(observe_until 20 "name=ByAddress") || fail "hci1 did not hear it"
echo "    hci1 hears: $heard"
[[ "$heard" == *"device $chosen "* ]] || fail "heard from another address: $heard"
grep -E "^<[0-6]>" "$TESTBED_WORK/bleadvd.log" | grep -E "beacon|adapter" | sed 's/^/    journal: /'

echo "3. the controllers back in their order, for the scenarios after this one"
stop_bleadvd
remove_controllers
make_controllers || fail "the controllers did not come back"
