#!/usr/bin/env bash
# `make systemd-check`: the unit file as systemd reads it. Prints the offline security exposure
# of each unit (the target is at most 1.5) and fails when verify finds a problem or the exposure is higher.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp systemd/bleadvd.service "$work/"
# verify wants ExecStart and ExecReload to exist; point them at stand-ins in the scratch folder.
printf '#!/bin/sh\n' > "$work/bleadvd"; chmod +x "$work/bleadvd"; cp "$work/bleadvd" "$work/bleadvctl"
sed -i "s|/usr/local/sbin/bleadvd|$work/bleadvd|; s|/usr/local/bin/bleadvctl|$work/bleadvctl|" "$work/bleadvd.service"
# man: references cannot be checked before the pages are installed; everything else must pass.
verify=$(systemd-analyze verify --man=no "$work/bleadvd.service" 2>&1 || true)
if [[ -n "$verify" ]]; then echo "systemd-analyze verify: $verify"; exit 1; fi
echo "systemd-analyze verify bleadvd.service: no problems"
exposure=$(systemd-analyze security --offline=true "$work/bleadvd.service" 2>&1 | sed -nE 's/.*Overall exposure level for bleadvd.service: ([0-9.]+).*/\1/p')
echo "systemd-analyze security --offline: exposure $exposure (target <= 1.5)"
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 1.5) }'

# The Improv join helper's unit: root, but with nothing root could add to a process.
cp systemd/bleadvd-join.service "$work/"
sed -i "s|/usr/local/sbin/bleadvd|$work/bleadvd|" "$work/bleadvd-join.service"
verify=$(systemd-analyze verify --man=no "$work/bleadvd-join.service" 2>&1 || true)
if [[ -n "$verify" ]]; then echo "systemd-analyze verify: $verify"; exit 1; fi
echo "systemd-analyze verify bleadvd-join.service: no problems"
exposure=$(systemd-analyze security --offline=true "$work/bleadvd-join.service" 2>&1 | sed -nE 's/.*Overall exposure level for bleadvd-join.service: ([0-9.]+).*/\1/p')
echo "systemd-analyze security --offline bleadvd-join.service: exposure $exposure (target <= 1.5, though it runs as root)"
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 1.5) }'
