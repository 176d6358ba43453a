#!/usr/bin/env bash
# testbed-timeout: 600
# The stall make soak-faults found at sets-1 (docs/RELIABILITY.md, "The soak with them"), on
# Bumble's controllers under systemd (testbed/run.sh --systemd --stack trixie --bumble): hci0
# made to report one advertising set, powered off and on, bluetooth.service restarted; then the
# same without the fault. Records the bus meanwhile (dbus-monitor: Adapter1's Powered and
# PowerState, InterfacesAdded/Removed, bleadvd's calls) and fails when the advertisements are not
# all on within 45 s of the second restart, printing the record and bleadvd's journal.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"
bumble_controllers || fail "needs Bumble's controllers (testbed/run.sh --bumble)"
install_package
# Five advertisements, as the soak's second config wants: more than the one slot, ad1 favoured
# (priority 10) as the soak's sensor is, so that it holds the slot and the four only wait while
# the fault holds. Before the fix they waited for good once the controller offered 240 again:
# nothing counted the slots again (five of one priority take turns, whose timer did).
original=$(cat /etc/bleadvd/bleadvd.toml)
restore() { printf '%s\n' "$original" > /etc/bleadvd/bleadvd.toml; systemctl restart bleadvd; }
on_exit restore
{
  printf 'adapter = "hci0"\n'
  for n in 1 2 3 4 5; do
    printf '[advertisement.ad%d]\ntype = "broadcast"\nmanufacturer_data = { "0xFFFF" = "c%d" }\n' "$n" "$n"
    if ((n == 1)); then printf 'priority = 10\n'; fi
  done
} > /etc/bleadvd/bleadvd.toml
systemctl restart bleadvd
wait_for 30 "five on" '[[ "$(advertisement_states)" == "ad1=on ad2=on ad3=on ad4=on ad5=on" ]]'
dbus-monitor --system "type='signal',sender='org.bluez'" > "$TESTBED_WORK/stall-bus.txt" 2>&1 &
monitor=$!
on_exit "kill $monitor"
anew() {
  busctl set-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Powered b false
  wait_for 10 "hci0 off" "powered hci0 false"
  power_on hci0
  systemctl restart bluetooth
}
for round in 1 2 3; do
  started=$(date +%s.%N)
  controller_fault hci0 sets 1 > /dev/null; anew
  sleep 3
  controller_fault hci0 sets 0 > /dev/null; anew
  if wait_for 45 "every advertisement on" '[[ "$(advertisement_states)" == "ad1=on ad2=on ad3=on ad4=on ad5=on" ]]'; then
    echo "round $round: back in $(elapsed "$started") s: $(advertisement_states)"
  else
    echo "round $round: not back: $(advertisement_states); BlueZ: $(active_instances) active, $(active_instances hci0 SupportedInstances) free"
    echo "the controller was asked for its number of sets $(controllers_log | grep -c '(fault sets)') time(s) under the fault; its log:"
    controllers_log | grep -E "fault|reported" | tail -n 8
    journalctl -u bleadvd --no-pager -o short-unix --since "@${started%.*}" | grep -E "event:|waiting|on air" | tail -n 30
    echo "---- the bus (org.bluez's signals about hci0)"
    grep -A12 -E "path=/org/bluez/hci0[; ]|InterfacesAdded|InterfacesRemoved" "$TESTBED_WORK/stall-bus.txt" \
      | grep -E "signal time|Powered|PowerState|object path \"/org/bluez/hci0\"|boolean|string \"(on|off|off-enabling|on-disabling)\"" | tail -n 60
    fail "round $round: bleadvd still waiting 45 s after bluetooth.service restarted"
  fi
done
