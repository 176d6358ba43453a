#!/usr/bin/env bash
# BlueZPeripheralManager against the real bluetoothd, through bleadvd:
# - an advertisement with a local name, two service UUIDs, manufacturer data and service data
#   is heard on hci1 with exactly those values; after `bleadvctl off` it is no longer heard;
# - the D-Bus messages of one start and one stop, counted with dbus-monitor, and the time from
#   RegisterAdvertisement to its reply;
# - kill -9 of bluetoothd and a restart: bleadvd sees vanished, appeared, adapter added, in that
#   order, and puts the advertisement back on air by itself.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

config="$TESTBED_WORK/e2e.toml"
cp "$TESTBED_ROOT/testbed/configs/20-e2e.toml" "$config"
heard_values=(0000180d-0000-1000-8000-00805f9b34fb 0000180f-0000-1000-8000-00805f9b34fb
  manufacturer=0xffff:01020304 service_data=00009999-0000-1000-8000-00805f9b34fb:0001)
# The name is in the scan response, which Bumble's controllers never send (lib.sh,
# scan_responses_heard): there, it is checked in what hci0 was given.
scan_responses_heard && heard_values+=(name=E2E-Thermo)

start_bleadvd "$config" --log-level debug
echo "bleadvd: $(grep -m1 '^<5>ready:' "$TESTBED_WORK/bleadvd.log")"
echo "while on:"
observe_until 30 "${heard_values[@]}"
scan_responses_heard || expect_scan_response "$(local_name_ad E2E-Thermo)"

echo "register call to reply: $(grep -m1 -o 'registered /org/bleadvd/advertisement/[0-9]* on hci0 .* in .*' "$TESTBED_WORK/bleadvd.log")"

# One stop and one start, every message on the bus meanwhile (dbus-monitor --profile: one line each).
dbus-monitor --system --profile > "$TESTBED_WORK/monitor.txt" 2>&1 &
monitor=$!
sleep 1
bleadvctl off e2e
bleadvctl off e2e >/dev/null  # idempotent: no bus traffic to BlueZ
heard=$(observe 4)
echo "after off:"; echo "${heard:-(nothing)}"
if grep -q "manufacturer=0xffff:01020304" <<< "$heard"; then echo "still heard after bleadvctl off" >&2; exit 1; fi
bleadvctl on e2e
sleep 0.5
kill "$monitor"; wait "$monitor" 2>/dev/null || true
echo "D-Bus messages between bleadvd and bluetoothd for one stop and one start:"
bleadvd_name=$(bus_owner org.bleadvd.Advertiser)
bluez_name=$(bus_owner org.bluez)
# dbus-monitor --profile columns: type time serial sender destination path interface member;
# replies: type time serial sender destination reply-serial. bleadvd calls bluetoothd by its
# unique name (never org.bluez: a call to the well-known name can reach the next bluetoothd).
by_name=$(awk -v a="$bleadvd_name" '$4 == a && $5 == "org.bluez"' "$TESTBED_WORK/monitor.txt")
[[ -z "$by_name" ]] || { echo "bleadvd called org.bluez by its well-known name:" >&2; echo "$by_name" >&2; exit 1; }
awk -v a="$bleadvd_name" -v b="$bluez_name" '
  ($4 == a && $5 == b) || ($4 == b && $5 == a) {
    print "    " $1, ($4 == a ? "bleadvd->bluez" : "bluez->bleadvd"), ($1 ~ /^(mc|sig)$/ ? $6 " " $8 : "reply to " $6)
  }' "$TESTBED_WORK/monitor.txt" | tee "$TESTBED_WORK/exchange.txt"
echo "    total: $(wc -l < "$TESTBED_WORK/exchange.txt") messages"

echo "heard again after on:"
observe_until 30 "${heard_values[@]}"

echo "kill -9 bluetoothd and start it again:"
restart_bluetoothd
wait_for 60 "bleadvd to put it back on air" \
  'bleadvctl status --json | grep -q "\"state\": \"on\""' || { bleadvctl status; tail -30 "$TESTBED_WORK/bleadvd.log"; exit 1; }
events=$(grep -o 'event: .*' "$TESTBED_WORK/bleadvd.log")
echo "$events" | sed 's/^/    /'
order=$(grep -nE 'event: (bluezVanished|bluezAppeared|adapterAdded\("hci0")' "$TESTBED_WORK/bleadvd.log" | cut -d: -f1 | tr '\n' ' ')
vanished=$(grep -n 'event: bluezVanished' "$TESTBED_WORK/bleadvd.log" | head -1 | cut -d: -f1)
appeared=$(grep -n 'event: bluezAppeared' "$TESTBED_WORK/bleadvd.log" | head -1 | cut -d: -f1)
added=$(grep -n 'event: adapterAdded("hci0"' "$TESTBED_WORK/bleadvd.log" | head -1 | cut -d: -f1)
[[ -n "$vanished" && -n "$appeared" && -n "$added" && $vanished -lt $appeared && $appeared -lt $added ]] \
  || { echo "events not in the order vanished, appeared, adapter added (lines: $order)" >&2; exit 1; }
echo "heard after the restart:"
observe_until 30 "${heard_values[@]}"
stop_bleadvd
