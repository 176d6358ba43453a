#!/usr/bin/env bash
# Runs inside the systemd test bed VM (testbed/run.sh --systemd): started by
# testbed-runner.service once the image's systemd reached multi-user.target, as root. Creates
# the two virtual controllers (the distribution's bluetooth.service starts on them, as udev
# asks), runs the scenarios named on the kernel command line (bleadvd_testbed.scenarios=A,B),
# prints the summary line the host reads and powers the machine off.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export TESTBED_ROOT=$(cd "$here/.." && pwd)
export TESTBED_WORK=/tmp/testbed
mkdir -p "$TESTBED_WORK"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_COLORS=0  # the console is a tty: keep escape codes out of the log
# bluetoothd is the distribution's bluetooth.service; the controllers are as the host asked.
export TESTBED_BLUETOOTHD=service
. "$here/lib.sh"
. "$here/harness.sh"
TESTBED_CONTROLLERS=$(kernel_arg bleadvd_testbed.controllers)
export TESTBED_CONTROLLERS=${TESTBED_CONTROLLERS:-extended}
TESTBED_CONTROLLER_COUNT=$(kernel_arg bleadvd_testbed.count)
export TESTBED_CONTROLLER_COUNT=${TESTBED_CONTROLLER_COUNT:-2}
trap 'systemctl poweroff --no-block' EXIT
bed_tools || fail_setup "the bed's btmon is missing"

echo "testbed: systemd $(systemctl --version | head -n1 | cut -d' ' -f2) is PID 1; system $(systemctl is-system-running)"
systemctl --failed --no-legend --plain | sed 's/^/testbed: failed unit: /'
modprobe hci_vhci || fail_setup "modprobe hci_vhci"
# bluetooth.service first (udev would start it at the first controller): make_controllers (lib.sh)
# asks it whether each controller is ready. (It does not keep hci0's first reset from timing
# out; that was tried.)
systemctl start bluetooth.service || fail_setup "bluetooth.service did not start"
make_controllers || fail_setup "bluetoothd did not offer LEAdvertisingManager1 on $(controller_names)"
# bluetoothd started again, so that it takes the controllers in their order: its first adapter
# (bluetoothctl's default, and BlueZ's examples') is hci0. Made again after a failed setup, hci1
# can reach a running bluetoothd first (10 and 11 then advertised on hci1, in one make test).
fresh_bluetoothd
systemd-run --quiet --unit=testbed-btmon "$(command -v btmon)" -w "$TESTBED_WORK/hci.btsnoop"
wait_for 10 "btmon's capture" '[ -s "$TESTBED_WORK/hci.btsnoop" ]' || fail_setup "btmon did not start"
power_on $(controller_names) || fail_setup "the controllers did not power on"
echo "testbed: $(stack_banner), bluetooth.service up on $(controller_names)$(cut -d' ' -f1 /proc/uptime) s after boot"

scenarios=()
IFS=, read -r -a names <<< "$(kernel_arg bleadvd_testbed.scenarios)"
for name in "${names[@]}"; do scenarios+=("$TESTBED_ROOT/$name"); done
run_scenarios "${scenarios[@]}"
