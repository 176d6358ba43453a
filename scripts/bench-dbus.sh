#!/usr/bin/env bash
# `make bench-dbus`: starts a private dbus-daemon and runs the D-Bus benchmark on it.
#   scripts/bench-dbus.sh [CALLS]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/private-bus.sh
start_bench_bus
.build/release/dbus-bench "$bus_address" "${1:-20000}"
