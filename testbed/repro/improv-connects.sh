#!/usr/bin/env bash
# testbed-timeout: 1800
# Home Assistant's Improv client (testbed/improv_client.py) connects ROUNDS times
# (bleadvd_repro.rounds, default 30) to the installed bleadvd offering Improv, reads device info
# and leaves. Each round says how many of the client's links came up half and were made afresh;
# the first three such rounds, and any round that failed, print bleadvd's and bluetoothd's
# journal (bluetoothd's debug lines on) from the round's start. bleadvd_repro.eatt=0 sets
# BlueZ's [GATT] Channels = 1 first (no EATT). It showed that the links 66 gives up on drop
# about 2 s after they came up half on hci1's side whether or not bleadvd registers anything
# beside them (docs/RELIABILITY.md, Improv):
#   BLEADVD_TESTBED_APPEND="bleadvd_repro.rounds=30" \
#     testbed/run.sh --systemd testbed/repro/improv-connects.sh
set -eu
. "$TESTBED_ROOT/testbed/lib.sh"

rounds=$(kernel_arg bleadvd_repro.rounds)
rounds=${rounds:-30}
if [[ "$(kernel_arg bleadvd_repro.eatt)" == 0 ]]; then
  sed -i -E 's/^#?Channels *=.*/Channels = 1/' /etc/bluetooth/main.conf
  grep "^Channels" /etc/bluetooth/main.conf | sed 's/^/    main.conf: /'
  fresh_bluetoothd
fi
install_package
cat > /etc/bleadvd/bleadvd.toml <<'TOML'
adapter = "hci0"
[improv]
device_name = "attic-pi"
authorization_seconds = 300
TOML
systemctl restart bleadvd
address=$(adapter_address)
pkill -USR2 -x bluetoothd && echo "    bluetoothd's debug lines are on"

# journal_since SINCE: bleadvd's and bluetoothd's journal from SINCE (a `date +%s.%N` value).
journal_since() {
  journalctl -u bleadvd -u bluetooth --no-pager -o short-precise --since "@${1%.*}" | grep -vE "dbus_fast|sap" | sed 's/^/        | /' || true
}

failed=0 afresh=0 shown=0
for ((round = 1; round <= rounds; round++)); do
  since=$(date +%s.%N)
  out=$(improv_client "$address" info)
  attempts=$(grep -c "connection attempt" <<< "$out" || true)
  afresh=$((afresh + attempts))
  echo "    round $round: $(elapsed "$since") s, $attempts link(s) made afresh: $(grep -E "device info|exited" <<< "$out" | head -n1)"
  if ! grep -q "device info" <<< "$out"; then
    failed=$((failed + 1))
    echo "$out" | sed 's/^/        /'
    journal_since "$since"
  elif ((attempts)); then
    grep "connection attempt" <<< "$out" | sed 's/^/        /'
    shown=$((shown + 1))
    ((shown > 3)) || journal_since "$since"
  fi
done
echo "    $rounds rounds: $failed failed, $afresh link(s) made afresh"
((failed == 0)) || fail "$failed round(s) failed"
