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
