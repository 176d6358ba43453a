#!/usr/bin/env bash
# `make systemd-check`: the unit files as systemd reads them. Prints the offline security
# exposure of each (the target is at most 1.5, the join helper's too, though it runs as root)
# and fails when verify finds a problem or an exposure is higher.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# verify wants ExecStart and ExecReload to exist; point them at stand-ins in the scratch folder.
printf '#!/bin/sh\n' > "$work/bleadvd"; chmod +x "$work/bleadvd"; cp "$work/bleadvd" "$work/bleadvctl"
for unit in bleadvd.service bleadvd-join.service; do
  sed "s|/usr/local/sbin/bleadvd|$work/bleadvd|; s|/usr/local/bin/bleadvctl|$work/bleadvctl|" "systemd/$unit" > "$work/$unit"
  # man: references cannot be checked before the pages are installed; everything else must pass.
  verify=$(systemd-analyze verify --man=no "$work/$unit" 2>&1 || true)
  if [[ -n "$verify" ]]; then echo "systemd-analyze verify: $verify"; exit 1; fi
  echo "systemd-analyze verify $unit: no problems"
  exposure=$(systemd-analyze security --offline=true "$work/$unit" 2>&1 | sed -nE "s/.*Overall exposure level for $unit: ([0-9.]+).*/\1/p")
  echo "systemd-analyze security --offline $unit: exposure $exposure (target <= 1.5)"
  awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 1.5) }'
done
