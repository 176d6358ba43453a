#!/usr/bin/env bash
# testbed-timeout: 900
# bluetooth.service restarted ROUNDS times (default 50; BLEADVD_REPRO_ROUNDS) under the installed
# bleadvd with two advertisements; after each, hci0 must have exactly two registered, and still
# two 2 s later. It reproduced an advertisement registered twice (docs/RELIABILITY.md, "A
# registration in the wrong bluetoothd"). A failing round prints the bus's own record of it
# (dbus-monitor --profile: every message between bleadvd and bluetoothd, and the bus's
# NameOwnerChanged) and btmon's management commands (Add/Remove Advertising with instances).
#   testbed/run.sh --systemd --stack trixie --legacy \
#     testbed/systemd-scenarios/60-install-deb.sh testbed/repro/bluetooth-restarts.sh
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

rounds=${BLEADVD_REPRO_ROUNDS:-$(kernel_arg bleadvd_repro.rounds)}
rounds=${rounds:-50}
[[ "$(systemctl is-active bleadvd)" == active ]] || fail "needs 60-install-deb.sh first"
config=/etc/bleadvd/bleadvd.toml
cp "$config" "$TESTBED_WORK/before-repro.toml"
bus_log=$TESTBED_WORK/repro-bus.log owners_log=$TESTBED_WORK/repro-owners.log
record_bus "$bus_log" "$owners_log"
trap 'stop_bus_record; cp "$TESTBED_WORK/before-repro.toml" "$config"; systemctl reload bleadvd || true' EXIT
printf '[advertisement.tag]\ntype = "broadcast"\nmanufacturer_data = { "0xFFFF" = "7a67" }\n' >> "$config"
systemctl reload bleadvd
[[ "$(active_instances)" == 2 ]] || fail "after reload: $(active_instances) registered, not 2"

# record ROUND STARTED: what the bus and btmon saw from STARTED (a `date +%s.%N`) on, and the
# journal of both services, on standard error.
record() {
  local round=$1 since=$2
  {
    echo "---- round $round: who owned org.bluez (NameOwnerChanged: time, old owner, new owner)"
    bluez_owners "$owners_log" | awk -v since="$since" '$1 >= since'
    echo "---- round $round: every message to or from bleadvd ($BLEADVD_UNIQUE_NAME), from the restart on (dbus-monitor --profile)"
    awk -v since="$since" '$2 >= since' "$bus_log" | head -n 400
    echo "---- round $round: btmon's management commands for advertising"
    btmon -T -r "$TESTBED_WORK/hci.btsnoop" 2>/dev/null \
      | grep -A2 -E "MGMT (Command|Event): [A-Za-z ]*Advertising|Set Powered" | tail -n 150
    echo "---- round $round: journal of bleadvd and bluetooth"
    journalctl -u bleadvd -u bluetooth --no-pager -o short-unix --since "@${since%.*}" | tail -n 80
  } >&2
}

times=()
for round in $(seq 1 "$rounds"); do
  # systemd refuses a sixth start within 10 s (StartLimitBurst): the bed's rounds are not a fault.
  systemctl reset-failed bluetooth 2> /dev/null || true
  sleep 1.5
  started=$(date +%s.%N)
  systemctl restart bluetooth
  if ! wait_for 30 "two registered after restart $round" '[[ "$(active_instances)" == 2 ]]'; then
    record "$round" "$started"
    fail "restart $round: hci0 has $(active_instances) registered, not 2"
  fi
  times+=("$(elapsed "$started")")
  sleep 2
  if [[ "$(active_instances)" != 2 ]]; then
    record "$round" "$started"
    fail "restart $round: $(active_instances) registered 2 s after it was 2"
  fi
done
echo "$rounds restarts of bluetooth.service: exactly 2 registered after each, in ${times[*]} s"
