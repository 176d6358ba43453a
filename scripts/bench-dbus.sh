#!/usr/bin/env bash
# `make bench-dbus`: starts a private dbus-daemon and runs the D-Bus benchmark on it.
#   scripts/bench-dbus.sh [CALLS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'kill "$(cat "$work/bus.pid" 2>/dev/null)" 2>/dev/null; rm -rf "$work"' EXIT
. scripts/private-bus.sh
start_private_bus "$work"
.build/release/dbus-bench "$bus_address" "${1:-20000}"
