#!/usr/bin/env bash
# `make bench-dbus`: starts a private dbus-daemon and runs the D-Bus benchmark on it.
#   scripts/bench-dbus.sh [CALLS]
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'kill "$(cat "$work/pid" 2>/dev/null)" 2>/dev/null; rm -rf "$work"' EXIT
cat > "$work/bus.conf" <<CONF
<busconfig>
  <type>session</type>
  <listen>unix:path=$work/socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$work/bus.conf" --fork --print-address=3 --print-pid=4 3> "$work/address" 4> "$work/pid" 2>/dev/null
.build/release/dbus-bench "$(head -n1 "$work/address")" "${1:-20000}"
