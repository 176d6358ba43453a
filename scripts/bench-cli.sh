#!/usr/bin/env bash
# `make bench-cli`: bleadvctl against `busctl call` for the same method (on, off, status, set),
# natively: the release bleadvd installed stripped in a folder of its own (bleadvctl a link to
# it, as `make install` puts them) on a private dbus-daemon with BlueZ's stand-in; three rounds
# of 20 calls of each, alternating (testbed/bench/cli_ratio.py). Fails (exit 1) when a ratio is
# past its target (docs/BENCHMARKS.md); `make bench` measures the same in the test bed.
#   scripts/bench-cli.sh [RUNS [ROUNDS]]   (BLEADVD=PATH: another build of bleadvd, to compare)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/private-bus.sh
start_bench_bus
start_bluez_standin "$work"
install -Dm755 -s "${BLEADVD:-.build/release/bleadvd}" "$work/bin/bleadvd"
ln -s bleadvd "$work/bin/bleadvctl"
cat > "$work/config.toml" <<CONF
[advertisement.bench]
enabled = false
type = "broadcast"
local_name = "Bench"

[advertisement.sensor.bthome]
local_name = "Sensor"
temperature = 21.5
CONF
start_release_bleadvd "$work" "$work/config.toml" "$work/bin/bleadvd"
echo "bench-cli: $(uname -m), $(nproc) CPUs, kernel $(uname -r); bleadvd $(stat -c %s "$work/bin/bleadvd") bytes stripped; busctl $(busctl --version | head -1)"
DBUS_SYSTEM_BUS_ADDRESS=$bus_address PATH="$work/bin:$PATH" /usr/bin/python3 testbed/bench/cli_ratio.py "${1:-20}" "${2:-3}"
