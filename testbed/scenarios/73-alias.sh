#!/usr/bin/env bash
# testbed-timeout: 400
# The name a phone shows once connected (#66 item 4), as a central on a host stack of its own
# reads it (Bumble on hci1, GAP's Device Name 0x2A00, which bluetoothd serves from hci0's alias):
# 1. With alias in the config, hci0's Alias is it while bleadvd runs, and the central reads it.
# 2. bleadvd stops: the Alias it found is back.
# 3. kill -9 leaves the alias set; the next bleadvd puts back the one the first found (kept in
#    its state directory), not its own, when it stops.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

fresh_bluetoothd
alias_of() { busctl get-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Alias | sed -E 's/^s "(.*)"$/\1/'; }
# The alias a run before may have left (a failed run's kill) is not what this run found.
busctl set-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Alias s ""
before=$(alias_of)
state="$TESTBED_WORK/alias-state"
rm -rf "$state"
cat > "$TESTBED_WORK/alias.toml" <<EOF
adapter = "hci0"
alias = "bleadvd Lamp"

[advertisement.lamp]
local_name = "Lamp"
service_uuids = ["180F"]
EOF
want=$(printf %s "bleadvd Lamp" | od -An -tx1 | tr -d ' \n')

echo "1. alias set while bleadvd runs; a central reads it from GAP"
start_bleadvd "$TESTBED_WORK/alias.toml" --state-directory "$state"
wait_for 10 "hci0's alias to be set" '[[ "$(alias_of)" == "bleadvd Lamp" ]]' || fail "hci0's Alias is \"$(alias_of)\", not the config's"
echo "    hci0's Alias: \"$(alias_of)\" (before bleadvd: \"$before\")"
grep "alias" "$TESTBED_WORK/bleadvd.log" | sed 's/^/    /'
address=$(adapter_address hci0)
start_central central 1 "$address"
out=$(central "read:2a00")
echo "$out"
expect_line "read 2a00: $want" "$out"

echo "2. bleadvd stops: the alias it found is back"
stop_bleadvd
[[ "$(alias_of)" == "$before" ]] || fail "after bleadvd stopped, hci0's Alias is \"$(alias_of)\", not \"$before\""
echo "    hci0's Alias: \"$(alias_of)\""

echo "3. kill -9 leaves it; the next bleadvd puts back what the first found"
start_bleadvd "$TESTBED_WORK/alias.toml" --state-directory "$state"
wait_for 10 "hci0's alias to be set" '[[ "$(alias_of)" == "bleadvd Lamp" ]]' || fail "the alias was not set again"
kill -9 "$BLEADVD_PID"; wait "$BLEADVD_PID" 2> /dev/null || true
echo "    after kill -9: \"$(alias_of)\"; kept to put back: $(cat "$state/alias")"
start_bleadvd "$TESTBED_WORK/alias.toml" --state-directory "$state"
stop_bleadvd
[[ "$(alias_of)" == "$before" ]] || fail "after a kill -9 and a second run, hci0's Alias is \"$(alias_of)\", not \"$before\""
echo "    after the second run stopped: \"$(alias_of)\""
