#!/usr/bin/env bash
# The address a scanner on hci1 hears, across 10 `bleadvctl set`s, for a broadcast and for a
# peripheral advertisement. A measurement for the docs (README, bleadvd.toml(5)): it fails only
# when a value is not heard. The kernel sends non-connectable advertising from a fresh
# non-resolvable random address each time it sets the parameters up, and bluetoothd sets them up
# again on property changes on some stacks: then a broadcast advertisement changes address on
# every `set`, and a receiver that keys on the address (Home Assistant's BTHome does; encrypted
# BTHome needs the address bleadvd used) sees a new device each time.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

config="$TESTBED_WORK/address.toml"
cp "$TESTBED_ROOT/testbed/configs/56-address.toml" "$config"
start_bleadvd "$config"
echo "hci0's public address: $(adapter_address hci0)"

# hci1 scans all along; its controller's reports are read from btmon's capture (bluetoothd on
# hci1 does not report every new non-resolvable address as a device, so its view would hide
# exactly what is measured here).
observe 400 > /dev/null 2>&1 &
scanner=$!
trap 'kill "$scanner" 2>/dev/null || true; stop_bleadvd' EXIT
# heard_from COMPANY HEX: the address hci1's controller first heard that manufacturer data from.
heard_from() {
  local want i
  want=$(printf 'ff%s%s' "${1:2:2}${1:0:2}" "$2")
  for ((i = 0; i < 100; i++)); do
    address=$(python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 1 --reports \
      | awk -v want="$want" 'index($2, want) { print $1; exit }')
    [[ -n "$address" ]] && { echo "$address"; return; }
    sleep 0.2
  done
}
for ad in beacon:ffff:b0 gadget:fffe:c0; do
  IFS=: read -r name company prefix <<< "$ad"
  addresses=()
  for i in $(seq 1 10); do
    value=$(printf '%s%02x' "$prefix" "$i")
    bleadvctl set "$name" "manufacturer_data.0x${company^^}=$value"
    address=$(heard_from "$company" "$value")
    [[ -n "$address" ]] || fail "hci1 did not hear $name's $value in 20 s"
    addresses+=("$address")
  done
  distinct=$(printf '%s\n' "${addresses[@]}" | sort -u | wc -l)
  echo "$name ($(grep -A1 "^\[advertisement.$name\]" "$config" | sed -n 's/^type = "\(.*\)"/\1/p')): $distinct distinct address(es) over 10 sets: $(printf '%s\n' "${addresses[@]}" | uniq | tr '\n' ' ')"
done

# Without a set: the addresses hci1's controller heard beacon's last value from over 10 s (on a
# controller without extended advertising the kernel rotates the two advertisements, and each
# turn sets the parameters up again).
since=$(date +%s.%N)
sleep 10
held=$(python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 1 --reports --timestamps \
  | awk -v since="$since" '$1 >= since && index($3, "ffffffb00a") { print $2 }' | sort -u | wc -l)
echo "beacon, 10 s without a set: heard from $held address(es)"
