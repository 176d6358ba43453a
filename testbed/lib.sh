# Helpers for test bed scenarios (sourced inside the VM). Scenarios run as root with
# TESTBED_ROOT (the repository) and TESTBED_WORK (a writable scratch folder) set. What runs the
# scenarios and reports them to the host is testbed/harness.sh.

# A scenario that `set -e` stops says where, and on what, as `fail` says what it checked: a
# failed command's silence (a `grep` that matched nothing, under pipefail) is no verdict.
if [[ $- == *e* ]]; then
  trap 'echo "the scenario stopped at ${BASH_SOURCE[0]##*/}:$LINENO: a command failed (status $?): $BASH_COMMAND" >&2' ERR
fi

# wait_for SECONDS WHAT CONDITION: polls CONDITION (shell code) every 0.2 s.
wait_for() {
  local seconds=$1 what=$2 condition=$3 i
  for ((i = 0; i < seconds * 5; i++)); do
    if eval "$condition"; then return 0; fi
    sleep 0.2
  done
  echo "timed out after ${seconds}s waiting for $what" >&2
  return 1
}

# elapsed START: seconds since START (a `date +%s.%N` value), to one decimal.
elapsed() {
  awk -v start="$1" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - start }'
}

# kernel_arg NAME: the value of NAME=VALUE on the guest's kernel command line (run.sh's
# BLEADVD_TESTBED_APPEND and its own words), or nothing.
kernel_arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^${1//./\\.}=//p"; }

# observe SECONDS: what a central on hci1 hears through bluetoothd in that time, one line per
# device. For "must not be heard" checks.
observe() {
  python3 "$TESTBED_ROOT/testbed/observer.py" --adapter hci1 --seconds "${1:-4}"
}

# observe_until SECONDS TEXT...: scans on hci1 until one device's line holds every TEXT (prints
# the lines, succeeds) or SECONDS pass (prints what was heard, fails).
observe_until() {
  local seconds=$1; shift
  local args=() text
  for text in "$@"; do args+=(--until "$text"); done
  python3 "$TESTBED_ROOT/testbed/observer.py" --adapter hci1 --seconds "$seconds" "${args[@]}"
}

# decode KIND ARGS...: testbed/decode.py in the decoder venv (Home Assistant's bthome-ble,
# beacontools): parsers we did not write. The images have their own (their Python is not the
# host's); the host-root test bed uses the one testbed/setup.sh made.
decode() {
  "$(decoders_python)" "$TESTBED_ROOT/testbed/decode.py" "$@"
}

# decoders_python: the Python of the venv with the programs we did not write (bthome-ble,
# beacontools, bleak): the image's own, or on the host-root test bed testbed/setup.sh's.
decoders_python() {
  local python=/opt/testbed-decoders/bin/python
  [[ -x "$python" ]] || python=${BLEADVD_TESTBED_CACHE:-$TESTBED_ROOT/.testbed-cache}/decoders/bin/python
  echo "$python"
}

# heard_service_data UUID: the service data for UUID (128-bit form) hci1 hears now, in hex.
heard_service_data() {
  observe_until 20 "service_data=$1:" | sed -nE "s/.*service_data=$1:([0-9a-f]+).*/\1/p" | head -n1
}

# listen_bthome: starts the scan wait_bthome reads and returns once hci1 scans, so that what
# is put on air next (an event's burst of 10 s) is heard however slowly the scan starts: in a
# loaded guest, starting a scanner takes up to 10 s and decoding a payload up to 17 s.
listen_bthome() {
  local line
  exec {BTHOME_STREAM}< <(exec python3 "$TESTBED_ROOT/testbed/observer.py" --adapter hci1 --seconds 180 --changes)
  BTHOME_OBSERVER=$!
  IFS= read -r -t 60 -u "$BTHOME_STREAM" line && [[ "$line" == scanning ]] \
    || { echo "hci1's scan did not start in 60 s: $line" >&2; return 1; }
}

# wait_bthome "DECODE OPTIONS" TEXT...: reads the 0xFCD2 service data hci1 hears (the scan
# listen_bthome started, or one started now), each payload as it is heard, until Home
# Assistant's reading of one (decode bthome ADDRESS HEX DECODE OPTIONS, with the address hci1
# heard it from, as Home Assistant does) holds every TEXT line, for up to 180 s; prints the
# reading and leaves the hex in HEARD and the address in HEARD_ADDRESS. The scan runs while the
# decoder reads: a decoder slower than the air misses no payload. On failure it prints every
# payload heard, with its time.
wait_bthome() {
  local options=$1; shift
  local line values missing started heard=()
  started=$(date +%s.%N)
  [[ -n "${BTHOME_OBSERVER:-}" ]] || listen_bthome
  while IFS= read -r -u "$BTHOME_STREAM" line; do
    [[ "$line" == *"service_data=0000fcd2-0000-1000-8000-00805f9b34fb:"* ]] || continue
    HEARD=$(sed -nE 's/.*service_data=0000fcd2-0000-1000-8000-00805f9b34fb:([0-9a-f]+).*/\1/p' <<< "$line")
    HEARD_ADDRESS=$(sed -nE 's/.*device ([0-9A-F:]{17}).*/\1/p' <<< "$line")
    heard+=("$(elapsed "$started") s: $HEARD from $HEARD_ADDRESS")
    # shellcheck disable=SC2086
    values=$(decode bthome "$HEARD_ADDRESS" "$HEARD" $options 2>/dev/null) || true
    missing=0
    for line in "$@"; do grep -qxF "$line" <<< "$values" || missing=1; done
    if ((missing == 0)); then
      stop_bthome
      printf '%s\n' "$values" | sed 's/^/    /'
      return 0
    fi
  done
  stop_bthome
  echo "the decoder never saw $*; in $(elapsed "$started") s hci1 heard ${#heard[@]} payload(s):" >&2
  printf '    %s\n' "${heard[@]}" >&2
  echo "the last decoded as:" >&2; printf '%s\n' "$values" >&2
  return 1
}

# stop_bthome: ends listen_bthome's scan.
stop_bthome() {
  kill "$BTHOME_OBSERVER" 2> /dev/null || true
  wait "$BTHOME_OBSERVER" 2> /dev/null || true
  exec {BTHOME_STREAM}<&-
  BTHOME_OBSERVER=
}

# adapter_address [hciN]: the adapter's address as BlueZ reports it (receivers see it).
adapter_address() {
  dbus-send --system --print-reply --dest=org.bluez "/org/bluez/${1:-hci0}" org.freedesktop.DBus.Properties.Get \
    string:org.bluez.Adapter1 string:Address | sed -nE 's/.*string "([0-9A-F:]+)".*/\1/p'
}

# advertising_data [hciN]: every advertising data payload the host set on a controller,
# in hex, oldest first, read from the btmon capture.
advertising_data() {
  python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index "${1:-0}" --adv-data
}

# advertising_data_since START [hciN]: the advertising data given to a controller since START (a
# `date +%s.%N` value), one line each: TIME HANDLE HEX.
advertising_data_since() {
  python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index "${2:-0}" --adv-data --timestamps \
    | awk -v from="$1" '$1 >= from'
}

# expect_line PATTERN TEXT: fails unless a line of TEXT contains PATTERN (fixed string).
expect_line() {
  if ! grep -qF -- "$1" <<< "$2"; then
    printf 'expected a line containing: %s\nin:\n%s\n' "$1" "$2" >&2
    return 1
  fi
}

# --- bleadvd in the bed -----------------------------------------------------------------------
# The build the guest sees in the repository: `make build` and `make deb`'s, or on an Arm guest
# `scripts/debian-swift.sh arm64`'s (the same layout: release/ and the packages).
TESTBED_BUILD=$TESTBED_ROOT/.build
[[ "$(uname -m)" == aarch64 ]] && TESTBED_BUILD=$TESTBED_ROOT/.build/debian-arm64
# Its release binaries, for the scenarios in testbed/scenarios/. Those in
# testbed/systemd-scenarios/ use what they installed, by its full path.
if [[ "$(basename "$(dirname "$(realpath "$0")")")" == scenarios ]]; then
  BLEADVD_BIN=${BLEADVD_BIN:-$TESTBED_BUILD/release}
  export PATH="$BLEADVD_BIN:$PATH"
fi

# --- BlueZ and the unit ------------------------------------------------------------------------
# active_instances [hciN [PROPERTY]]: BlueZ's count of registered advertisements on the adapter
# (or of PROPERTY's: SupportedInstances, the slots still free).
active_instances() {
  busctl get-property org.bluez "/org/bluez/${1:-hci0}" org.bluez.LEAdvertisingManager1 "${2:-ActiveInstances}" 2>/dev/null | awk '{print $2}'
}

# advertisement_states: each advertisement's state as `bleadvctl status --json` shows it, on one
# line, by name: "gateway=on kitchen=paused".
advertisement_states() {
  bleadvctl status --json | python3 -c '
import json, sys
print(" ".join("%s=%s" % (name, entry["state"]) for name, entry in sorted(json.load(sys.stdin).items()) if entry["kind"] == "advertisement"))'
}

# unit_property NAME: bleadvd.service's property NAME, as systemctl shows it.
unit_property() {
  systemctl show -P "$1" bleadvd.service
}

# leftovers: every path on the root file system named after bleadvd (the units' state included),
# one per line, sorted.
leftovers() {
  find / -xdev \( -name '*bleadvd*' -o -name '*bleadvctl*' \) -not -path "$TESTBED_ROOT/*" \
    -not -path '/tmp/*' -not -path '/proc/*' 2>/dev/null | sort
}

# fail MESSAGE: prints it on standard error and exits 1.
fail() {
  echo "$*" >&2
  exit 1
}

# install_policy: bleadvd's D-Bus policy on the guest's system bus (its /etc is an overlay, or
# a snapshot); stop_bleadvd takes it away again, so that a package scenario after this one in
# the same boot finds the system as the package left it.
install_policy() {
  mkdir -p /etc/dbus-1/system.d
  cp "$TESTBED_ROOT/systemd/org.bleadvd.Advertiser.conf" /etc/dbus-1/system.d/
  dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.ReloadConfig > /dev/null
}

# install_package: bleadvd's package installed with apt, unless bleadvd runs already (a scenario
# before this one in the same boot installed it). A config make uninstall left (63) is kept, as
# dpkg keeps an admin's: the scenario writes its own.
install_package() {
  [[ "$(systemctl is-active bleadvd 2>/dev/null)" != active ]] || return 0
  local deb; deb=$(ls "$TESTBED_BUILD"/bleadvd_*-1_"$(dpkg --print-architecture)".deb | tail -n1)
  DEBIAN_FRONTEND=noninteractive apt-get install -y -o Dpkg::Options::=--force-confold "$deb" > "$TESTBED_WORK/apt-install.out" 2>&1 \
    || { cat "$TESTBED_WORK/apt-install.out"; fail "apt install ./$(basename "$deb") failed"; }
}

# wifi_access_point SSID PASSWORD ADDRESS: two mac80211_hwsim radios; on the first ($ap),
# hostapd's WPA2 access point SSID at ADDRESS/24 with dnsmasq for DHCP; the second ($station)
# is left to the scenario's Wi-Fi client. What a Wi-Fi scenario before it in the same boot left
# (NetworkManager, the access point, the radios) is stopped and removed first.
wifi_access_point() {
  systemctl stop NetworkManager 2> /dev/null || true
  local daemon
  for daemon in hostapd dnsmasq; do
    [[ -f "$TESTBED_WORK/$daemon.pid" ]] && kill "$(cat "$TESTBED_WORK/$daemon.pid")" 2> /dev/null || true
  done
  modprobe -r mac80211_hwsim 2> /dev/null || true
  modprobe mac80211_hwsim radios=2
  wait_for 10 "two Wi-Fi interfaces" '[ "$(ls /sys/class/ieee80211 | wc -l)" -ge 2 ]'
  local wlans; mapfile -t wlans < <(for phy in /sys/class/ieee80211/*; do ls "$phy/device/net"; done | sort)
  ap=${wlans[0]} station=${wlans[1]}
  cat > "$TESTBED_WORK/hostapd.conf" <<CONF
interface=$ap
driver=nl80211
ssid=$1
hw_mode=g
channel=6
wpa=2
wpa_key_mgmt=WPA-PSK
rsn_pairwise=CCMP
wpa_passphrase=$2
CONF
  ip addr add "$3/24" dev "$ap"
  hostapd -B -P "$TESTBED_WORK/hostapd.pid" -f "$TESTBED_WORK/hostapd.log" "$TESTBED_WORK/hostapd.conf" > /dev/null
  local prefix=${3%.*}
  dnsmasq --interface="$ap" --bind-interfaces --except-interface=lo --port=0 --user=root \
    --dhcp-range="$prefix.10,$prefix.50,1h" --pid-file="$TESTBED_WORK/dnsmasq.pid" --log-facility="$TESTBED_WORK/dnsmasq.log"
}

# networkmanager_station: NetworkManager started, managing $station (wifi_access_point's second
# radio) and leaving the access point's radio alone; returns once the station is disconnected,
# ready for a join.
networkmanager_station() {
  mkdir -p /etc/NetworkManager/conf.d
  printf '[keyfile]\nunmanaged-devices=interface-name:%s\n' "$ap" > /etc/NetworkManager/conf.d/testbed.conf
  systemctl start NetworkManager
  wait_for 30 "NetworkManager to manage $station" "nmcli -t -f DEVICE,STATE device | grep -qE '^$station:disconnected'"
}

# improv_client ADDRESS STEP...: Home Assistant's Improv client on hci1
# (testbed/improv_client.py) against the device at ADDRESS; when a step failed, how its
# connections went (bleak's and bleak-retry-connector's log) follows.
improv_client() {
  local address=$1 status=0; shift
  timeout 240 "$(decoders_python)" "$TESTBED_ROOT/testbed/improv_client.py" --address "$address" "$@" 2> "$TESTBED_WORK/client.err" || status=$?
  if ((status)); then
    echo "the client exited $status; its log:"
    grep -vE "dbus_fast|Received|Sending|ProPERTIES" "$TESTBED_WORK/client.err" | tail -n 40
  fi
}

# Centrals on hosts of their own: testbed/bumble_central.py owns a controller through the HCI
# user channel (its steps and output: that file). Each is started once for a scenario (under
# emulation Bumble takes 20-30 s to start, and each start and end of the user channel resets the
# emulated controller) and takes its runs from a pipe; its files are $TESTBED_WORK/NAME.*: its
# stderr (Bumble's notes about the emulated controller) in NAME.err, every run's lines in
# NAME.out.
declare -gA CENTRAL_PIDS CENTRAL_FDS
# start_central NAME HCI PERIPHERAL [ARGS...]: the central NAME on hciHCI (taken from
# bluetoothd) for the peripheral at address PERIPHERAL, with bumble_central.py's ARGS (--keys).
start_central() {
  local name=$1 hci=$2 peripheral=$3 fd; shift 3
  free_hci "$hci"
  rm -f "$TESTBED_WORK/$name.runs"
  mkfifo "$TESTBED_WORK/$name.runs"
  exec {fd}<> "$TESTBED_WORK/$name.runs"
  CENTRAL_FDS[$name]=$fd
  "$(decoders_python)" -u "$TESTBED_ROOT/testbed/bumble_central.py" "$peripheral" --transport "hci-socket:$hci" "$@" \
    < "$TESTBED_WORK/$name.runs" > "$TESTBED_WORK/$name.started" 2> "$TESTBED_WORK/$name.err" &
  CENTRAL_PIDS[$name]=$!
  on_exit stop_centrals
  wait_for 120 "the central $name on hci$hci" "grep -q '^ready' '$TESTBED_WORK/$name.started' || ! kill -0 ${CENTRAL_PIDS[$name]}" || true
  grep -q '^ready' "$TESTBED_WORK/$name.started" \
    || fail "the central $name did not start: $(tail -n 20 "$TESTBED_WORK/$name.err")"
  sed "s/^/    $name: /" "$TESTBED_WORK/$name.started"
}
# stop_centrals: each central's pipe closed (it disconnected after its last run) and its
# controller back in bluetoothd for the scenarios after this one.
stop_centrals() {
  local name fd
  for name in "${!CENTRAL_PIDS[@]}"; do
    fd=${CENTRAL_FDS[$name]}
    exec {fd}>&-
    kill "${CENTRAL_PIDS[$name]}" 2> /dev/null || true
    wait "${CENTRAL_PIDS[$name]}" 2> /dev/null || true
  done
}
# central_run NAME ARGS... STEP...: one run of the central NAME (bumble_central.py's options and
# steps); prints its lines and keeps them in NAME.out. When it fails: its notes and the HCI record.
central_run() {
  local name=$1 out status started; shift
  out=$(mktemp "$TESTBED_WORK/$name.run.XXXXXX")
  started=$(date '+%H:%M:%S.%N')
  (IFS=$'\t'; printf '%s\t%s\n' "$out" "$*") >&"${CENTRAL_FDS[$name]}"
  wait_for 90 "the central $name's run ($*)" "grep -q '^exit ' '$out' || ! kill -0 ${CENTRAL_PIDS[$name]}" || true
  status=$(sed -n 's/^exit //p' "$out"); status=${status:-124}
  grep -v '^exit ' "$out" | tee -a "$TESTBED_WORK/$name.out" | sed 's/^/    /'
  if ((status)); then
    echo "    the central $name's run ended $status:"; tail -n 20 "$TESTBED_WORK/$name.err" | sed 's/^/    /'
    echo "    what the HCI record has since it started (links, ATT, MGMT connection events):"
    hci_since "$started" | sed 's/^/    /' || true
  fi
}
# central ARGS... STEP...: a run of the central named central (the scenario's one).
central() { central_run central "$@"; }
# record_since HH:MM:SS.N: btmon's decoded record (hci.btsnoop) from that time on, each
# packet's line whole (its name, controller and time; btmon cuts them at 80 columns otherwise).
record_since() {
  btmon -T -C 250 -r "$TESTBED_WORK/hci.btsnoop" 2> /dev/null \
    | awk -v since="$1" 'match($0, /[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]+$/) { now = substr($0, RSTART) } now >= since' || true
}
# hci_since HH:MM:SS.N: the record from that time on, its link, ATT and connection lines.
hci_since() {
  record_since "$1" \
    | grep -E "Connect|Disconnect|ATT|Handle:|Reason|Status: [^S]|Role|already|LE Address|Encryption|Long Term" \
    | grep -vE "Number of Completed|RAW (Open|Close)" | awk 'NR <= 120' || true
}
# free_hci N: hciN powered off behind bluetoothd (testbed/mgmt.py: 5.82's btmgmt runs nothing
# without a terminal), so that Bumble can take it through the HCI user channel; bluetoothd
# powers it on again when the channel closes (the adapter comes back).
free_hci() {
  wait_for 10 "bluetoothd to have hci$1 back" "powered hci$1 true" || true
  python3 "$TESTBED_ROOT/testbed/mgmt.py" "$1" power off > /dev/null
  wait_for 10 "hci$1 to be off" "powered hci$1 false"
}

# powered HCI true|false: whether bluetoothd says HCI's Powered is that.
powered() {
  [[ "$(busctl get-property org.bluez "/org/bluez/$1" org.bluez.Adapter1 Powered 2> /dev/null)" == "b $2" ]]
}

# power_on HCI...: each adapter powered on (Adapter1.Powered), or fails naming the one that did
# not come on in 20 s. bluetoothd powers an adapter on itself when it registers it (the policy
# plugin, AutoEnable=true in Debian's main.conf), and while that is under way it refuses a Set
# of Powered with org.bluez.Error.Busy, whose message is empty (busctl: "Failed to set
# property Powered on interface org.bluez.Adapter1: "): make test failed 71 on that once in CI
# (testbed/repro/power-on.sh). A refused Set is asked again until the adapter says it is on.
power_on() {
  local hci
  for hci in "$@"; do
    wait_for 20 "$hci to be powered on" \
      "powered $hci true || { busctl set-property org.bluez /org/bluez/$hci org.bluez.Adapter1 Powered b true 2> /dev/null && powered $hci true; }" \
      || return 1
  done
}

# on_exit COMMAND: COMMAND run when the scenario exits, after those given before it (once each).
ON_EXIT=()
on_exit() {
  [[ " ${ON_EXIT[*]} " == *" $1 "* ]] || ON_EXIT+=("$1")
  trap 'for command in "${ON_EXIT[@]}"; do $command; done' EXIT
}

# start_bleadvd CONFIG [ARGS...]: bleadvd in the background, logging to $TESTBED_WORK/bleadvd.log;
# returns once it reported ready.
start_bleadvd() {
  local config=$1; shift
  install_policy
  : > "$TESTBED_WORK/bleadvd.log"
  bleadvd --config "$config" "$@" >> "$TESTBED_WORK/bleadvd.log" 2>&1 &
  BLEADVD_PID=$!
  on_exit stop_bleadvd
  wait_for 30 "bleadvd to be ready" 'grep -q "^<5>ready:" "$TESTBED_WORK/bleadvd.log"' \
    || { cat "$TESTBED_WORK/bleadvd.log"; return 1; }
}

# open_scenario CONFIG COUNT [ARGS...]: a scenario's opening: bluetoothd started afresh
# (fresh_bluetoothd), bleadvd started on CONFIG with ARGS (start_bleadvd), and COUNT
# advertisements on air on hci0 (BlueZ's ActiveInstances) within 30 s.
open_scenario() {
  local config=$1 count=$2; shift 2
  fresh_bluetoothd
  start_bleadvd "$config" "$@"
  wait_for 30 "$count advertisement(s) on air" "[[ \"\$(active_instances)\" == $count ]]" \
    || fail "bleadvd did not put $count advertisement(s) on air on hci0 (BlueZ holds $(active_instances))"
}

# relinks: how many times bleadvd (start_bleadvd's) said it registered advertisements again
# beside a central's link.
relinks() { grep -c 'took advertising there off air' "$TESTBED_WORK/bleadvd.log" || true; }

# relinked BEFORE: returns once what a central's link took off air is on air again: with
# extended advertising, bleadvd registers it again once the link has lasted 2 s (relinks goes past
# BEFORE, its count when the link was asked); without, the kernel enables advertising again by
# itself. Then a second for the controller to send.
relinked() {
  if [[ "${TESTBED_CONTROLLERS:-extended}" != legacy ]]; then
    wait_for 20 "bleadvd to register the advertisements again beside the link" "[ \$(relinks) -gt $1 ]"
  fi
  sleep 1
}

# stop_bleadvd: SIGTERM, wait for it to exit, and take the policy install_policy put in /etc.
stop_bleadvd() {
  if kill -TERM "$BLEADVD_PID" 2>/dev/null; then
    wait "$BLEADVD_PID" 2>/dev/null || true
  fi
  rm -f /etc/dbus-1/system.d/org.bleadvd.Advertiser.conf
  dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.ReloadConfig > /dev/null 2>&1 || true
}

# bleadvd_log_lines: how many lines bleadvd's log has now, for bleadvd_quiet_since.
bleadvd_log_lines() {
  wc -l < "$TESTBED_WORK/bleadvd.log"
}

# bleadvd_quiet_since LINE: bleadvd logged nothing at warning or worse (journal priorities 0-4)
# after line LINE of its log: no BlueZ call failed and waited for the backoff's timer, the audit
# found nothing to mend. Prints those lines, and fails, when it did. Whether bleadvd followed
# BlueZ's own events, which no machine's speed changes.
bleadvd_quiet_since() {
  local loud
  loud=$(tail -n +"$(($1 + 1))" "$TESTBED_WORK/bleadvd.log" | grep -E '^<[0-4]>' || true)
  [[ -z "$loud" ]] && return 0
  echo "bleadvd logged at warning or worse:"
  echo "$loud" | head -n 10 | sed 's/^/    /'
  return 1
}

# bleadvd_journal SINCE: bleadvd.service's journal since then (a time journalctl takes), its
# messages alone.
bleadvd_journal() {
  journalctl -u bleadvd --since "$1" --no-pager -o cat 2> /dev/null || true
}

# bus_owner NAME: the unique name that owns NAME on the system bus (empty when none does).
bus_owner() {
  dbus-send --system --print-reply=literal --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.GetNameOwner "string:$1" 2> /dev/null | tr -d ' ' || true
}

# record_bus BUS_LOG OWNERS_LOG: the bus's own record, until stop_bus_record: every message to
# or from bleadvd (which must be on the bus) and BlueZ's object and property signals, one line
# each in BUS_LOG (dbus-monitor --profile: type, time, serial, sender, destination, path,
# interface, member), and who owned org.bluez when in OWNERS_LOG (a second monitor: --profile
# does not print a signal's arguments; bluez_owners reads it). Sets BLEADVD_UNIQUE_NAME.
record_bus() {
  BLEADVD_UNIQUE_NAME=$(bus_owner org.bleadvd.Advertiser)
  # Line-buffered: a monitor stopped with SIGTERM loses nothing it printed.
  stdbuf -oL dbus-monitor --system --profile "sender='$BLEADVD_UNIQUE_NAME'" "destination='$BLEADVD_UNIQUE_NAME'" \
    "type='signal',interface='org.freedesktop.DBus.ObjectManager'" \
    "type='signal',interface='org.freedesktop.DBus.Properties',path_namespace='/org/bluez'" > "$1" 2>&1 &
  BUS_RECORDERS=($!)
  stdbuf -oL dbus-monitor --system "type='signal',member='NameOwnerChanged',arg0='org.bluez'" > "$2" 2>&1 &
  BUS_RECORDERS+=($!)
}

stop_bus_record() {
  kill "${BUS_RECORDERS[@]}" 2>/dev/null || true
}

# bluez_owners OWNERS_LOG: each change of org.bluez's owner in record_bus's OWNERS_LOG, a line
# each: time (seconds since the epoch), old owner, new owner ("" for none).
bluez_owners() {
  awk '/member=NameOwnerChanged/ { split($2, t, "="); time = t[2]; n = 0; next }
       /^ *string / { v[n++] = $2; if (n == 3) print time, v[1], v[2] }' "$1"
}

# --- scenario 50's crash loop (and testbed/repro/crash-timeline.sh's) --------------------------
# crash_loop_config FILE: two broadcast advertisements and no adapter named: the default, which
# most users keep (hci1 can advertise too).
crash_loop_config() {
  cat > "$1" <<'TOML'
[advertisement.first]
type = "broadcast"
manufacturer_data = { "0xFFFF" = "c1a5" }
[advertisement.second]
type = "broadcast"
service_data = { "9999" = "c2a5" }
TOML
}

# crash_loop TIMES: bluetoothd killed with -9 and started again TIMES times as this guest starts
# it (by hand, or bluetooth.service), both of crash_loop_config's advertisements expected on
# hci0 after each (testbed/crashloop.py: a line per crash; bluetoothd's output appended to
# bluetoothd-crashes.log).
crash_loop() {
  local service=()
  [[ "${TESTBED_BLUETOOTHD:-hand}" == service ]] && service=(--service)
  python3 "$TESTBED_ROOT/testbed/crashloop.py" --times "$1" --expect 2 --log "$TESTBED_WORK/bluetoothd-crashes.log" "${service[@]}"
}

# --- the stack --------------------------------------------------------------------------------
# btvirt_options: TESTBED_CONTROLLER_COUNT controllers (two unless run.sh --controllers says
# three), LE without extended advertising when TESTBED_CONTROLLERS is legacy (btvirt -L: LE-only
# too, where a Raspberry Pi's radio keeps BR/EDR), else btvirt's default LE 5.2 ones.
btvirt_options() {
  if [[ "${TESTBED_CONTROLLERS:-extended}" == legacy ]]; then echo "-L -l${TESTBED_CONTROLLER_COUNT:-2}"; else echo "-l${TESTBED_CONTROLLER_COUNT:-2}"; fi
}

# btvirt_program: the emulator of the virtual controllers. With three controllers or more
# (two centrals beside bleadvd): BlueZ's btvirt of this stack's release with testbed/bluez/btdev-links.patch
# (testbed/setup.sh builds it); else, and on an Arm guest, the packaged one. Fails, saying so,
# when three controllers or more want the patched one and the guest cannot see it (the
# packaged one gives a second central's link the first one's handle: its ATT goes unanswered).
btvirt_program() {
  local built=${BLEADVD_TESTBED_CACHE:-$TESTBED_ROOT/.testbed-cache}/btvirt-$(stack_suite)
  if (( ${TESTBED_CONTROLLER_COUNT:-2} < 3 )) || [[ "$(uname -m)" != x86_64 ]]; then command -v btvirt; return; fi
  [[ -x "$built" ]] || { echo "testbed: $built (BlueZ's emulator with testbed/bluez/btdev-links.patch, which ${TESTBED_CONTROLLER_COUNT} controllers need) is not in the guest's view of the repository: run testbed/setup.sh, and in a git worktree copy it into the worktree's .testbed-cache (a symlink out of the repository is not shared)" >&2; return 1; }
  echo "$built"
}

# bed_tools: the bed's own build of BlueZ's btmon (testbed/bluez/build.sh: common.sh's
# BTMON_SUITE's release, for every stack) ahead of the packaged one in PATH, for the guest's
# capture and every scenario that decodes it; fails, saying so, on an x86_64 guest without it.
# An Arm guest keeps its packaged btmon (make testbed-arm64-test's is Debian 13's: the same release).
bed_tools() {
  local tools=${BLEADVD_TESTBED_CACHE:-$TESTBED_ROOT/.testbed-cache}/bluez-tools
  [[ "$(uname -m)" != x86_64 ]] && return
  [[ -x "$tools/btmon" ]] || { echo "testbed: $tools/btmon (BlueZ's monitor as the bed builds it) is not in the guest's view of the repository: run testbed/setup.sh, and in a git worktree copy .testbed-cache/bluez-tools into the worktree's" >&2; return 1; }
  export PATH=$tools:$PATH
}

# controller_names: hci0 hci1 (and hci2 with three controllers).
controller_names() {
  local n
  for ((n = 0; n < ${TESTBED_CONTROLLER_COUNT:-2}; n++)); do printf 'hci%d ' "$n"; done
}

# adapter_ready hciN: bluetoothd offers LEAdvertisingManager1 on it.
adapter_ready() {
  busctl get-property org.bluez "/org/bluez/$1" org.bluez.LEAdvertisingManager1 SupportedInstances > /dev/null 2>&1
}

# controllers_ready: bluetoothd offers advertising on every controller.
controllers_ready() {
  local hci
  for hci in $(controller_names); do adapter_ready "$hci" || return 1; done
}

# controllers_present: the kernel has every controller.
controllers_present() {
  local hci
  for hci in $(controller_names); do [[ -e /sys/class/bluetooth/$hci ]] || return 1; done
}

# remove_controllers: every virtual controller removed (btvirt or Bumble's stopped), as a USB radio
# pulled out.
remove_controllers() {
  if bumble_controllers; then
    pkill -f "$TESTBED_ROOT/testbed/controllers\.py serve" || true
  else
    pkill -x "$(basename "$(btvirt_program 2> /dev/null || echo btvirt)")" || true
  fi
  wait_for 20 "the controllers to go" controllers_gone
}
# make_controllers [VAR=VALUE...]: the virtual controllers made (btvirt run with those variables
# in its environment, e.g. BTVIRT_SWAP=1); returns once bluetoothd, which runs already, offers
# advertising on each. Under emulation the kernel's first HCI Reset of a new controller can time
# out (2 s) while btvirt is still making the next one ("hci0: Opcode 0x0c03 failed: -110", seen
# at boot in every boot of make test until warm_crypto); such a controller never reaches
# bluetoothd. The kernel says so at once: all are made again then, without waiting out the 40 s.
make_controllers() {
  local attempt before
  local warmed; warmed=$(date +%s.%N)
  if ! bumble_controllers; then  # Bumble's controllers do their cryptography in Python
    warm_crypto
    echo "testbed: the kernel's AES and AES-CMAC instantiated for btvirt in $(elapsed "$warmed") s" >&2
  fi
  for attempt in 1 2 3 4; do
    before=$(setup_timeouts)
    start_btvirt "$@" || return 1
    wait_for 40 "$(controller_names)in bluetoothd" "controllers_ready || (( \$(setup_timeouts) > before ))" || true
    controllers_ready && return 0
    echo "testbed: a virtual controller failed its setup (attempt $attempt: $(dmesg | grep -E "$setup_timeout_pattern" | tail -n1 | sed 's/^\[[^]]*\] //'))$( ((attempt < 4)) && echo "; making them again")" >&2
    ((attempt < 4)) || return 1
    remove_controllers || true
  done
}

# warm_crypto: the kernel's AES and AES-CMAC, which each emulated controller opens (btdev_create's
# bt_crypto_new, through AF_ALG), instantiated once before btvirt starts. btvirt makes its
# controllers one after another before its main loop runs, and the kernel sends each its HCI
# Reset as soon as it exists: the first instantiation in a boot (measured 2.4 s on Debian 12's
# kernel under emulation, with its modules loaded: the templates' self-tests) held btvirt past
# the kernel's 2 s for the first controller's Reset ("hci0: Opcode 0x0c03 failed: -110", then
# every controller made again), in every boot of make test. Warmed, the boots since made them at
# the first attempt.
warm_crypto() {
  python3 -c 'import socket
for kind, name in (("skcipher", "ecb(aes)"), ("hash", "cmac(aes)")):
    with socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0) as s:
        s.bind((kind, name))' 2> /dev/null || true
}

# start_btvirt [VAR=VALUE...]: btvirt started with those variables in its environment; under
# systemd as the unit testbed-btvirt (the soak stops it by that name).
# With Bumble's controllers (TESTBED_CONTROLLERS=bumble) testbed/controllers.py runs instead, its
# log (each fault it acted on) in $TESTBED_WORK/controllers.log; under systemd the same unit's.
start_btvirt() {
  local program
  if bumble_controllers; then
    program=("$(decoders_python)" -u "$TESTBED_ROOT/testbed/controllers.py" serve "${TESTBED_CONTROLLER_COUNT:-2}")
  else
    program=("$(btvirt_program)") || return 1
    program+=($(btvirt_options))
  fi
  if [[ -d /run/systemd/system ]]; then
    systemctl reset-failed testbed-btvirt 2> /dev/null || true
    systemd-run --quiet --unit=testbed-btvirt "${@/#/--setenv=}" "${program[@]}"
  else
    env "$@" "${program[@]}" >> "$TESTBED_WORK/$(bumble_controllers && echo controllers || echo btvirt).log" 2>&1 &
  fi
}

# bumble_controllers: the bed's controllers are Bumble's (testbed/controllers.py), not btvirt's.
bumble_controllers() { [[ "${TESTBED_CONTROLLERS:-extended}" == bumble ]]; }

# scan_responses_heard: whether hci1 hears the scan responses hci0 sends. Not on Bumble's
# controllers (0.0.236): its advertising sets send their advertising data only, never their scan
# response data, and its scanner reports each advertisement's data twice, the second time flagged
# as a scan response (bumble/controller.py, AdvertisingSet.send_extended_advertising_data and
# on_advertising_pdu; btmon shows hci1's two reports of the same bytes, event types 0x0001 and 0x0008).
# The local name BlueZ puts in the scan response is then never heard there: a scenario checks it in
# the bytes hci0 was given instead (expect_scan_response).
scan_responses_heard() { ! bumble_controllers; }

# expect_scan_response HEX [hciN]: the last scan response data the host gave the controller (btmon's
# capture) holds HEX, one AD structure's bytes, e.g. the complete local name's (length, 09, name).
expect_scan_response() {
  local last
  last=$(python3 "$TESTBED_ROOT/testbed/hcicapture.py" "$TESTBED_WORK/hci.btsnoop" --index "${2:-0}" --scan-data | tail -n1)
  [[ "${last#* }" == *"$1"* ]] || fail "hci${2:-0}'s last scan response data does not hold $1: ${last:-(none given)}"
  echo "hci${2:-0}'s scan response data holds $1 (what a scanner of this stack's controllers cannot hear): ${last#* }"
}

# name_or TEXT NAME: what hci1 is to hear of an advertisement named NAME: "name=NAME", or on
# controllers whose scan responses are not heard (scan_responses_heard) TEXT, a field of its
# advertising data; the caller then checks the name with expect_name NAME.
name_or() { if scan_responses_heard; then echo "name=$2"; else echo "$1"; fi; }

# expect_name NAME: on controllers whose scan responses are not heard, the name in what hci0 was
# given instead (expect_scan_response); elsewhere nothing (hci1 heard it).
expect_name() { scan_responses_heard || expect_scan_response "$(local_name_ad "$1")"; }

# local_name_ad NAME: the complete local name's AD structure, in hex.
local_name_ad() {
  printf '%02x09%s' $((${#1} + 1)) "$(printf '%s' "$1" | od -An -tx1 | tr -d ' \n')"
}

# hci0_set_up_again: hci0 powered off and on (the kernel sets its controller up anew) and bluetoothd
# started again (it reads the adapter's advertising features only as it takes it): how a fault
# "sets N" of Bumble's controllers reaches BlueZ, and how it leaves.
hci0_set_up_again() {
  busctl set-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Powered b false
  wait_for 10 "hci0 off" "powered hci0 false"
  power_on hci0
  fresh_bluetoothd
}

# controller_fault hciN FAULT [VALUE]: a fault of testbed/controllers.py's set on Bumble's controller
# hciN (its help lists them); prints what the controller does now.
controller_fault() {
  "$(decoders_python)" "$TESTBED_ROOT/testbed/controllers.py" fault "$@"
}

# clear_faults: every fault of Bumble's controllers off (a scenario's exit; the harness's, after
# each scenario: 71 once ran on a controller that 77, stopped early, left refusing enables).
clear_faults() {
  local hci
  bumble_controllers || return 0
  for hci in $(controller_names); do controller_fault "$hci" clear > /dev/null 2>&1 || true; done
}

# controller_sends hciN: what Bumble's controller hciN sends now, by its own account: the handles of
# its enabled advertising sets ("1,2"), "legacy", or "nothing".
controller_sends() {
  "$(decoders_python)" "$TESTBED_ROOT/testbed/controllers.py" state | sed -n "s/^$1: .*; on air \([^;]*\);.*/\1/p"
}

# controllers_log: what Bumble's controllers said (each fault they acted on), here or in the journal.
controllers_log() {
  if [[ -d /run/systemd/system ]]; then journalctl -u testbed-btvirt --no-pager -o cat; else cat "$TESTBED_WORK/controllers.log"; fi
}

# setup_timeouts: how many commands of a controller's setup the kernel gave up on so far.
setup_timeout_pattern='Bluetooth: hci[0-9]+: Opcode 0x[0-9a-f]+ failed: -110'
setup_timeouts() {
  dmesg | grep -cE "$setup_timeout_pattern" || true
}

# controllers_gone: no controller left in the kernel.
controllers_gone() {
  local hci
  for hci in $(controller_names); do [[ ! -e /sys/class/bluetooth/$hci ]] || return 1; done
}

# stack_banner: the suite, kernel, BlueZ, D-Bus and systemd versions, how bluetoothd runs and
# what the controllers are, and the capture's btmon, on one line.
stack_banner() {
  printf 'stack %s: kernel %s, BlueZ %s (%s), dbus %s%s, controllers %s' "$(stack_suite)" "$(uname -r)" \
    "$(/usr/libexec/bluetooth/bluetoothd --version)" \
    "$([[ $TESTBED_BLUETOOTHD == service ]] && echo "bluetooth.service" || echo "by hand, -E")" \
    "$(dbus-daemon --version | head -n1 | awk '{print $NF}')" \
    "$([[ -d /run/systemd/system ]] && echo ", systemd $(systemctl --version | head -n1 | cut -d' ' -f2) as PID 1")" \
    "$(controllers_banner)"
  printf ', btmon %s' "$(btmon --version 2> /dev/null)"
}

# controllers_banner: what the controllers are, in a few words.
controllers_banner() {
  case ${TESTBED_CONTROLLERS:-extended} in
    legacy) echo "without extended advertising (btvirt -L)" ;;
    bumble) echo "Bumble's $("$(decoders_python)" -c 'from importlib.metadata import version; print(version("bumble"))'), LE 5.0 with extended advertising (testbed/controllers.py)" ;;
    *) echo "LE 5.2 with extended advertising$([[ "$(btvirt_program 2> /dev/null)" == */btvirt-* ]] && echo ", btdev-links.patch")" ;;
  esac
}

# stack_suite: the guest's Debian suite, as its os-release names it (unstable's names testing's
# codename, "forky/sid" in PRETTY_NAME: it is called sid here).
stack_suite() {
  (. /etc/os-release && if [[ "${PRETTY_NAME:-}" == */sid ]]; then echo sid; else echo "${VERSION_CODENAME:-$ID}"; fi)
}

# stack_label: the stack in a few words, for PASS and FAIL lines: suite (and the architecture
# when it is not x86_64), controllers, bluetoothd.
stack_label() {
  printf '%s, %s controllers, bluetoothd %s' "$(stack_suite)$([[ "$(uname -m)" == x86_64 ]] || echo " $(uname -m)")" \
    "${TESTBED_CONTROLLERS:-extended}" "$([[ ${TESTBED_BLUETOOTHD:-hand} == service ]] && echo "by bluetooth.service" || echo "-E by hand")"
}

# start_bluetoothd: bluetoothd as this guest runs it: by hand with -E (guest.sh), or the
# distribution's bluetooth.service (systemd-guest.sh; reset-failed, or a crash loop would hit
# systemd's start limit).
start_bluetoothd() {
  if [[ "${TESTBED_BLUETOOTHD:-hand}" == service ]]; then
    systemctl reset-failed bluetooth.service 2>/dev/null || true
    systemctl start bluetooth.service
  else
    /usr/libexec/bluetooth/bluetoothd -n -E >> "$TESTBED_WORK/bluetoothd.log" 2>&1 &
  fi
}

# fresh_bluetoothd [HCI...]: bluetoothd stopped and started again with its adapters (every
# controller unless named: not one a central holds through the user channel) powered and advertising,
# as the test bed boots: for a scenario after one that crashed or stopped it.
fresh_bluetoothd() {
  pkill -x bluetoothd || true
  bluez_gone
  start_bluetoothd
  local hci adapters=("$@")
  ((${#adapters[@]})) || read -r -a adapters <<< "$(controller_names)"
  for hci in "${adapters[@]}"; do
    wait_for 20 "$hci's advertising manager" "adapter_ready $hci"
    power_on "$hci"
  done
}

# restart_bluetoothd: kill -9 and start it again, as a crash and systemd's restart would.
restart_bluetoothd() {
  pkill -9 -x bluetoothd
  bluez_gone
  start_bluetoothd
}

# bluez_gone: waits (10 s at most) until no one owns org.bluez on the system bus.
bluez_gone() {
  wait_for 10 "org.bluez to vanish" '[[ -z "$(bus_owner org.bluez)" ]]'
}
