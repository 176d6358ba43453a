# Sourced by the benchmark drivers: start_private_bus WORK starts a dbus-daemon of its own on
# WORK/socket that lets anyone own any name, call anything and monitor (no system policy), puts
# its PID in WORK/bus.pid and its address in $bus_address.
start_private_bus() {
  local work=$1
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
  dbus-daemon --config-file="$work/bus.conf" --fork --print-pid=4 4> "$work/bus.pid" 2>/dev/null
  bus_address=unix:path=$work/socket
}

# start_bench_bus: a fresh work folder in $work, removed at exit once every PID listed in
# $work/pids and the bus are killed, and the private bus in it ($bus_address).
start_bench_bus() {
  work=$(mktemp -d)
  trap 'kill $(cat "$work/pids" "$work/bus.pid" 2>/dev/null) 2>/dev/null; rm -rf "$work"' EXIT
  start_private_bus "$work"
}

# start_peer WORK NAME SCRIPT [ARGS...]: a stand-in (a Python script of
# Tests/TestSupport/Peers) on the bus, its output in WORK/NAME, its PID added to WORK/pids once
# it said ready.
start_peer() {
  local work=$1 name=$2 script=$3; shift 3
  /usr/bin/python3 "Tests/TestSupport/Peers/$script" "$bus_address" "$@" > "$work/$name" 2>&1 &
  local peer=$!
  echo $peer >> "$work/pids"
  until grep -qs '^ready' "$work/$name"; do
    kill -0 "$peer" || { cat "$work/$name"; exit 1; }
    sleep 0.1
  done
}

# start_bluez_standin WORK: BlueZ's stand-in (bluez_standin.py, one adapter, hci0) on the bus.
start_bluez_standin() { start_peer "$1" standin bluez_standin.py hci0; }

# start_networkmanager_standin WORK: NetworkManager's stand-in (networkmanager_standin.py: one
# Wi-Fi device, five access points, every call counted) on the bus.
start_networkmanager_standin() { start_peer "$1" nm networkmanager_standin.py; }

# start_release_bleadvd WORK CONFIG [EXECUTABLE]: the release bleadvd (or EXECUTABLE) on the bus
# with CONFIG (its state in WORK, its log in WORK/log), its PID in $bleadvd_pid and WORK/pids,
# once it said ready.
start_release_bleadvd() {
  local work=$1 config=$2 executable=${3:-.build/release/bleadvd}
  DBUS_SYSTEM_BUS_ADDRESS=$bus_address "$executable" --config "$config" --state-directory "$work" 2> "$work/log" &
  bleadvd_pid=$!
  echo $bleadvd_pid >> "$work/pids"
  until grep -q '^<5>ready:' "$work/log" 2>/dev/null; do
    kill -0 "$bleadvd_pid" || { cat "$work/log"; exit 1; }
    sleep 0.1
  done
}

# bleadvd_unique_name: the bus's unique name of the bleadvd that owns the control API's name.
bleadvd_unique_name() {
  DBUS_SYSTEM_BUS_ADDRESS=$bus_address busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
    GetNameOwner s org.bleadvd.Advertiser | awk '{ print $2 }' | tr -d '"'
}

# bleadvd_cpu_ns: the CPU time the started bleadvd has used, in nanoseconds (schedstat).
bleadvd_cpu_ns() { awk '{ print $1 }' "/proc/$bleadvd_pid/schedstat"; }
# bleadvd_rss: its resident set, in KiB.
bleadvd_rss() { awk '/^VmRSS/ { print $2 }' "/proc/$bleadvd_pid/status"; }
# bleadvd_lines: the lines it has logged so far.
bleadvd_lines() { grep -c . "$work/log"; }
