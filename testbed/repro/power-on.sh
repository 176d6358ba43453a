#!/usr/bin/env bash
# testbed-timeout: 1800
# fresh_bluetoothd's first step, ROUNDS times (bleadvd_repro.rounds, default 30): bluetoothd
# stopped and started again, then, as soon as hci0's advertising manager is there, Set Powered
# true by D-Bus (odd rounds at the scenarios' pace, even rounds at once). Each round prints the
# Set's answer (the error's name and message, when one) and bluetoothd's own lines about
# powering hci0 (its debug lines on), so that a refused Set shows who else was powering the
# adapter at that moment; then lib.sh's power_on, which waits such a refusal out.
# CI's make test of f800f45 failed 71 at this step on Debian 12: "Failed to set property
# Powered on interface org.bluez.Adapter1: " (busctl, an empty message). Captured here (1 of
# 30, a round that polled without a pause): org.bluez.Error.Busy with no message, while
# bluetoothd's own power-on of hci0 (AutoEnable: "set_mode() sending set mode command for
# index 0", on 1.3 s later) was under way.
#   BLEADVD_TESTBED_APPEND="bleadvd_repro.rounds=30" testbed/run.sh --systemd testbed/repro/power-on.sh
set -eu
. "$TESTBED_ROOT/testbed/lib.sh"

rounds=$(kernel_arg bleadvd_repro.rounds)
rounds=${rounds:-30}
mkdir -p /etc/systemd/system/bluetooth.service.d
printf '[Service]\nExecStart=\nExecStart=/usr/libexec/bluetooth/bluetoothd -d\n' > /etc/systemd/system/bluetooth.service.d/debug.conf
systemctl daemon-reload
echo "AutoEnable in main.conf: $(grep -E '^[#[:space:]]*AutoEnable' /etc/bluetooth/main.conf || echo 'not set (the default)')"
refused=0
for ((i = 1; i <= rounds; i++)); do
  pkill -x bluetoothd || true
  bluez_gone
  since=$(date +%s.%N)
  start_bluetoothd
  # Odd rounds at the scenarios' pace (wait_for polls every 0.2 s); even rounds poll without a
  # pause, so that the Set comes as soon as the adapter's interfaces are on the bus.
  if ((i % 2)); then
    wait_for 20 "hci0's advertising manager" "adapter_ready hci0"
  else
    until adapter_ready hci0; do :; done
  fi
  if answer=$(dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Set \
      string:org.bluez.Adapter1 string:Powered variant:boolean:true 2>&1); then
    echo "round $i: Set Powered taken ($(elapsed "$since") s after the start)"
  else
    refused=$((refused + 1))
    echo "round $i: Set Powered refused ($(elapsed "$since") s after the start): $(tr '\n' ' ' <<< "$answer")"
    echo "    busctl's words for the same answer: $(busctl set-property org.bluez /org/bluez/hci0 org.bluez.Adapter1 Powered b true 2>&1 || true)"
    journalctl -u bluetooth -o short-precise --no-pager --since "@${since%.*}" \
      | grep -iE "power|set_mode|Set Powered|pending|Failed to set" | awk 'NR <= 30' | sed 's/^/    | /' || true
  fi
  power_on hci0 && echo "    power_on hci0 (lib.sh): on $(elapsed "$since") s after the start"
done
echo "$refused of $rounds Set Powered refused"
