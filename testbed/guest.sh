#!/usr/bin/env bash
# Runs inside the test bed VM as root (see testbed/run.sh): brings BlueZ up on two virtual
# controllers, runs each scenario given, and prints a summary line the host reads.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export TESTBED_ROOT=$(cd "$here/.." && pwd)
export TESTBED_WORK=/tmp/testbed
# bluetoothd is started by hand here, with -E (lib.sh's start_bluetoothd); the controllers are
# btvirt's default LE 5.2 ones, or without extended advertising (TESTBED_CONTROLLERS=legacy).
export TESTBED_BLUETOOTHD=hand
export TESTBED_CONTROLLERS=${TESTBED_CONTROLLERS:-extended}
export TESTBED_CONTROLLER_COUNT=${TESTBED_CONTROLLER_COUNT:-2}
mkdir -p "$TESTBED_WORK"
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
. "$here/lib.sh"
. "$here/harness.sh"
bed_tools || fail_setup "the bed's btmon is missing"

boot_started=$(date +%s.%N)

modprobe bluetooth || fail_setup "modprobe bluetooth"
modprobe hci_vhci || fail_setup "modprobe hci_vhci"
mkdir -p /run/dbus
dbus-daemon --system --fork || fail_setup "dbus-daemon"
# bluetoothd first: make_controllers asks it whether each controller is ready. (It does not keep
# hci0's first reset from timing out; that was tried.)
start_bluetoothd
wait_for 20 "org.bluez" 'busctl status org.bluez > /dev/null 2>&1' || fail_setup "bluetoothd did not start"
make_controllers || fail_setup "bluetoothd did not offer LEAdvertisingManager1 on $(controller_names)"
# bluetoothd started again, so that it takes the controllers in their order: its first adapter
# (bluetoothctl's default, and BlueZ's examples') is hci0. Made again after a failed setup, hci1
# can reach a running bluetoothd first (10 and 11 then advertised on hci1, in one make test).
fresh_bluetoothd
# The HCI capture starts once BlueZ is up; the scenarios only need what happens after that.
btmon -w "$TESTBED_WORK/hci.btsnoop" > /dev/null 2>&1 &
wait_for 10 "btmon's capture" '[ -s "$TESTBED_WORK/hci.btsnoop" ]' || fail_setup "btmon did not start"
power_on $(controller_names) || fail_setup "the controllers did not power on"
echo "testbed: $(stack_banner), up $(elapsed "$boot_started") s after the guest started"

run_scenarios "$@"
