#!/usr/bin/env bash
# How long a `set` takes to reach the controller with three advertisements on one adapter, with
# BlueZ's default rotation and with duration = 1 (seconds per slot). A controller without
# extended advertising sends one advertisement at a time: the kernel rotates them, 2 s each by
# default, and new data goes to the controller when its advertisement's turn comes. With
# extended advertising each has a set of its own and the data goes at once. A measurement for
# the docs; it fails only when a value never reaches the controller.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

config="$TESTBED_WORK/rotation.toml"
write_config() {  # write_config DURATION_LINE
  : > "$config"
  echo 'adapter = "hci0"' >> "$config"
  for name in a b c; do
    printf '[advertisement.%s]\ntype = "broadcast"\nmanufacturer_data = { "0xFFFF" = "0000" }\n%s\n' "$name" "$1" >> "$config"
  done
}

# measure LABEL: 10 sets of a's data, each timed to the first advertising data given to the
# controller holding it. Each set waits for the one before to arrive (on a rotating controller a
# set made before the last one went out replaces it), then a varying pause, so that the sets fall
# at different points of the rotation.
measure() {
  local i value start stamp latencies=()
  for i in $(seq 1 10); do
    value=$(printf '61%02x' "$i")
    start=$(date +%s.%N)
    bleadvctl set a "manufacturer_data.0xFFFF=$value"
    stamp=
    for ((poll = 0; poll < 100 && ${#stamp} == 0; poll++)); do
      stamp=$(python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index 0 --adv-data --timestamps \
        | awk -v start="$start" -v want="ffff$value" '$1 >= start && index($3, want) { print $1; exit }')
      [[ -n "$stamp" ]] || sleep 0.2
    done
    [[ -n "$stamp" ]] || fail "$1: a's $value did not reach the controller in 20 s"
    latencies+=("$(awk -v a="$start" -v b="$stamp" 'BEGIN { printf "%d", (b - a) * 1000 }')")
    sleep "0.$((i * 37 % 10))"
  done
  printf '%s\n' "${latencies[@]}" | sort -n > "$TESTBED_WORK/latency.txt"
  echo "$1: set to controller, ms: $(tr '\n' ' ' < "$TESTBED_WORK/latency.txt")-> median $(sed -n 5p "$TESTBED_WORK/latency.txt")-$(sed -n 6p "$TESTBED_WORK/latency.txt"), max $(tail -n1 "$TESTBED_WORK/latency.txt")"
}

write_config ""
start_bleadvd "$config"
wait_for 30 "three on air" '[[ "$(active_instances)" == 3 ]]'
measure "3 advertisements, BlueZ's default rotation"
write_config "duration = 1"
bleadvctl reload
wait_for 30 "three on air" '[[ "$(active_instances)" == 3 ]]'
measure "3 advertisements, duration = 1"
