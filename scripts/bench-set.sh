#!/usr/bin/env bash
# `make bench-set`: bleadvd's own share of a `set`, natively: the release bleadvd on a private
# dbus-daemon with BlueZ's stand-in (Tests/TestSupport/Peers/bluez_standin.py), COUNT `Set`
# calls 150 ms apart, each timed from its arrival to the PropertiesChanged bleadvd sends BlueZ
# (testbed/bench/set_share.py; `make bench` measures the same in the test bed).
#   scripts/bench-set.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-100}
. scripts/private-bus.sh
start_bench_bus
start_bluez_standin "$work"
cat > "$work/config.toml" <<CONF
[advertisement.sensor.bthome]
local_name = "Sensor"
temperature = 21.5
CONF
start_release_bleadvd "$work" "$work/config.toml"
/usr/bin/python3 testbed/bench/set_share.py "$bus_address" sensor temperature "$count"
