#!/usr/bin/env bash
# `make bench-hostile`: what hostile input costs the release bleadvd, on a private dbus-daemon
# with no bluetoothd (bleadvd is ready with nothing on air; the control API and reloads work).
#   - RSS before and after RELOADS refused reloads of a 640 KB config (a SIGHUP each);
#   - RSS, high-water mark and time to the error for CALLS calls of `Status` carrying a 30 MB
#     `ay` (the bus policy lets any user call Status);
#   - CENTRALS calls of `Centrals` in a row, as fast as one caller makes them, with a central
#     connected to BlueZ's stand-in: what bleadvd asked BlueZ meanwhile (#78 item 3: at most one
#     read of the bonds a second, whoever asks), counted by dbus-monitor, not by bleadvd.
# Figures in docs/RELIABILITY.md (round two, items 2 and 5).
#   scripts/bench-hostile.sh [RELOADS] [CALLS] [CENTRALS]
set -euo pipefail
cd "$(dirname "$0")/.."
reloads=${1:-40} calls=${2:-3} centrals=${3:-1000}
. scripts/private-bus.sh
start_bench_bus
export DBUS_SYSTEM_BUS_ADDRESS=$bus_address
cp systemd/bleadvd.toml "$work/config.toml"
start_release_bleadvd "$work" "$work/config.toml"
pid=$bleadvd_pid
kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$pid/status"; }

# A file every line of which is fine TOML and whose keys bleadvd refuses: the child parses all
# of it, then refuses it.
for ((i = 0; i < 13000; i++)); do printf '[advertisement.a%d]\nlocal_name = "x"\nbogus = 1\n' "$i"; done > "$work/refused.toml"
size=$(stat -c %s "$work/refused.toml")
before=$(kib VmRSS)
cp "$work/refused.toml" "$work/config.toml"
for ((i = 1; i <= reloads; i++)); do
  kill -HUP "$pid"
  until (($(grep -c 'reload refused' "$work/log") >= i)); do sleep 0.05; done
  ((i == 10)) && after10=$(kib VmRSS)
done
after=$(kib VmRSS)
printf 'refused reloads of a %d KB file: RSS %d KiB before, %d after 10, %d after %d (%+d KiB over the last %d)\n' \
  $((size / 1000)) "$before" "${after10:-0}" "$after" "$reloads" $((after - ${after10:-0})) $((reloads - 10))

# A Status call carrying 30 MB to NAME: the time to its error, and the error's name.
big_status() {
  /usr/bin/python3 - "$work/socket" "$1" <<'PY'
import sys, time, dbus
bus = dbus.bus.BusConnection("unix:path=" + sys.argv[1])
call = dbus.lowlevel.MethodCallMessage(sys.argv[2], "/org/bleadvd/Advertiser", "org.bleadvd.Advertiser1", "Status")
call.append(dbus.ByteArray(b"\0" * 30_000_000), signature="ay")
start = time.monotonic()
try:
    bus.send_message_with_reply_and_block(call, 60)
    print("accepted")
except dbus.DBusException as error:
    print(f"{(time.monotonic() - start) * 1000:.0f} ms, {error.get_dbus_name()}")
PY
}
before=$(kib VmRSS)
for ((i = 1; i <= calls; i++)); do
  printf '30 MB Status call %d: %s; RSS %d KiB (high-water mark %d)\n' "$i" "$(big_status org.bleadvd.Advertiser)" "$(kib VmRSS)" "$(kib VmHWM)"
done
printf 'RSS %d KiB before the calls, %d after\n' "$before" "$(kib VmRSS)"
# The same call to a name nobody owns: what the bus alone takes to receive it and refuse it.
printf '30 MB Status call to a name nobody owns (the bus alone): %s\n' "$(big_status org.bleadvd.Nobody)"
kill -0 "$pid"

# Centrals in a row, as any member of the control group may call it, with a central connected:
# the calls bleadvd made to BlueZ's stand-in meanwhile, as dbus-monitor saw them.
kill "$pid"; wait "$pid" 2> /dev/null || true
start_bluez_standin "$work"
cp systemd/bleadvd.toml "$work/config.toml"
start_release_bleadvd "$work" "$work/config.toml"
standin() { DBUS_SYSTEM_BUS_ADDRESS=$bus_address busctl --system call org.bluez /test test.StandIn "$@" > /dev/null; }
standin AddDevice sssb hci0 5C:F3:70:00:00:01 phone true
standin Connect ss hci0 5C:F3:70:00:00:01
sleep 1
unique=$(bleadvd_unique_name)
dbus-monitor --address "$bus_address" --profile "type='method_call',sender='$unique'" > "$work/centrals.bus" 2> /dev/null &
monitor=$!
sleep 0.5
/usr/bin/python3 - "$work/socket" "$centrals" > "$work/centrals.out" <<'PY'
import sys, time, dbus
bus = dbus.bus.BusConnection("unix:path=" + sys.argv[1])
advertiser = dbus.Interface(bus.get_object("org.bleadvd.Advertiser", "/org/bleadvd/Advertiser"), "org.bleadvd.Advertiser1")
start, listed = time.monotonic(), 0
for _ in range(int(sys.argv[2])):
    listed += len(advertiser.Centrals())
print("%.1f %d" % (time.monotonic() - start, listed))
PY
sleep 0.5
kill "$monitor"; wait "$monitor" 2> /dev/null || true
read -r took listed < "$work/centrals.out"
asked=$(awk '$1 == "mc"' "$work/centrals.bus" | wc -l)
read_bonds=$(awk '$1 == "mc" && /GetManagedObjects/' "$work/centrals.bus" | wc -l)
printf '%d Centrals calls in %s s (%d central(s) listed in all): bleadvd made %d calls to the bus meanwhile, %d of them GetManagedObjects (BlueZ reads; at most one a second allowed: %d)\n' \
  "$centrals" "$took" "$listed" "$asked" "$read_bonds" $(( ${took%.*} + 2 ))
((listed == centrals)) || { echo "the connected central was not listed by every call" >&2; exit 1; }
((read_bonds <= ${took%.*} + 2)) || { echo "bleadvd read BlueZ more than once a second" >&2; exit 1; }
[[ -z "${BENCH_SHOW_BUS:-}" ]] || awk '$1 == "mc"' "$work/centrals.bus" >&2
kill -0 "$bleadvd_pid"
