# The harness of a test bed guest (sourced by testbed/guest.sh and testbed/systemd-guest.sh after
# lib.sh): runs the scenarios, reports each with what a failure needs, and prints the summary
# line the host reads. Scenarios themselves source lib.sh only.

# run_scenarios SCENARIO...: runs each (420 s at most, or what a "# testbed-timeout: N" line of
# the scenario says, or the kernel command line's bleadvd_testbed.timeout), prints PASS or FAIL
# with its output and the diagnostics, then the summary line the host reads.
run_scenarios() {
  local passed=0 failed=0 scenario name out start limit running
  local failures=()
  # The release binaries run from a copy in the guest's memory: the repository is a 9p share
  # without a page cache, and under emulation each start read the 19 MB binary through it again
  # (2.3 s for `bleadvctl --help`, 0.7 s from the copy).
  if [[ -z "${BLEADVD_BIN:-}" && -x "$TESTBED_BUILD/release/bleadvd" ]]; then
    mkdir -p "$TESTBED_WORK/bin"
    cp "$TESTBED_BUILD/release/bleadvd" "$TESTBED_WORK/bin/bleadvd"
    ln -sfn bleadvd "$TESTBED_WORK/bin/bleadvctl"
    export BLEADVD_BIN=$TESTBED_WORK/bin
  fi
  for scenario in "$@"; do
    name=$(basename "$scenario" .sh)
    out="$TESTBED_WORK/$name.out"
    start=$(date +%s.%N)
    limit=$(kernel_arg bleadvd_testbed.timeout)
    limit=${limit:-$(sed -n 's/^# testbed-timeout: \([0-9]*\)$/\1/p' "$scenario" | head -n1)}
    rm -f "$TESTBED_WORK/bleadvd.log"  # so that diagnostics never show an earlier scenario's
    # A copy runs, not the file: bash reads a script as it goes, so an edit made to the file
    # meanwhile would be read from the middle of a line. (In a folder of the same name as the
    # file's: lib.sh tells the scenarios that run the release binaries by it.)
    running="$TESTBED_WORK/running/$(basename "$(dirname "$(realpath "$scenario")")")/$name.sh"
    mkdir -p "$(dirname "$running")"
    cp "$scenario" "$running"
    if timeout "${limit:-420}" bash "$running" > "$out" 2>&1; then
      passed=$((passed + 1))
      echo "PASS $name [$(stack_label)] ($(elapsed "$start") s)"
      sed 's/^/    /' "$out"
    else
      failed=$((failed + 1))
      printf 'FAIL %s [%s] (%s s)\n---- scenario output\n' "$name" "$(stack_label)" "$(elapsed "$start")"
      cat "$out"
      show_diagnostics
      failures+=("$name [$(stack_label)]: $(grep -a . "$out" | tail -n 1)")
      cp "$out" "$TESTBED_WORK/failed-${#failures[@]}.out"
      bleadvd_notable > "$TESTBED_WORK/failed-${#failures[@]}.log"
    fi
    # A scanner or central a scenario left behind (a background job's child outlives `kill` of
    # the job) would scan into the next one: one left by 56 scanned on hci1 for 400 s.
    pkill -f "$TESTBED_ROOT/testbed/(observer|gatt_central|bumble_central)\.py" 2>/dev/null || true
    clear_faults  # a fault a scenario left on Bumble's controllers would reach the next one
    # A scenario that ran out of time took what it had started with it (timeout signals its
    # whole process group), bluetoothd among them when the scenario had started it: the next
    # one begins on the bed as it booted, and the log says so (three scenarios failed in a row
    # on a bed without bluetoothd after 54 ran out of time, 2026-12-02).
    if [[ -z "$(bus_owner org.bluez)" ]]; then
      echo "testbed: bluetoothd was gone after $name; started again for the next scenario"
      fresh_bluetoothd > /dev/null 2>&1 || echo "testbed: bluetoothd did not come back: $(controller_names)"
    fi
  done
  # The HCI capture judges several scenarios and shows each failure's record: a boot in which
  # btmon died fails, saying where its record ends.
  if ! pgrep -x btmon > /dev/null; then
    failed=$((failed + 1))
    failures+=("btmon: the HCI capture stopped during the boot")
    printf 'its last packet: %s\n(end)\n' "$(btmon -T -C 250 -r "$TESTBED_WORK/hci.btsnoop" 2> /dev/null | grep -a -E '^[<>@=]' | tail -n 1)" \
      > "$TESTBED_WORK/failed-${#failures[@]}.out"
  fi
  # Again at the end, where a log cut in the middle (CI keeps its head and tail) still shows it,
  # each with the last lines its scenario printed before it failed (what it saw last).
  local i
  for i in "${!failures[@]}"; do
    echo "testbed: FAILED ${failures[$i]}"
    grep -a . "$TESTBED_WORK/failed-$((i + 1)).out" | head -n -1 | tail -n 16 | sed 's/^/testbed:   | /'
    sed 's/^/testbed:   | bleadvd: /' "$TESTBED_WORK/failed-$((i + 1)).log" 2> /dev/null || true
  done
  echo "testbed: $passed passed, $failed failed"
}

# bleadvd_notable: bleadvd's last 6 lines at notice or above, from its log here or its
# service's journal. The summary shows them beside a failure's last lines: a CI log keeps its
# head and tail, and the diagnostics in between were cut from stop 76's (65: bleadvctl bonds
# got no answer in 30 s; what bleadvd did meanwhile was not in what CI kept).
bleadvd_notable() {
  if [[ -s "$TESTBED_WORK/bleadvd.log" ]]; then
    grep -aE '^<[0-5]>' "$TESTBED_WORK/bleadvd.log" | tail -n 6
  elif [[ -d /run/systemd/system ]] && systemctl cat bleadvd > /dev/null 2>&1; then
    journalctl -u bleadvd -p notice -n 6 --no-pager -o cat
  fi
}

# fail_setup WHY: the guest could not set the bed up: what there is of it (the controllers,
# BlueZ's objects, the kernel's Bluetooth messages, bluetoothd's first lines about hci0 or, under
# systemd, the units), the diagnostics, and the run's failure, for the host to read.
fail_setup() {
  echo "testbed: setup failed: $*"
  echo "---- controllers: $(ls /sys/class/bluetooth 2>&1 | tr '\n' ' ')"
  echo "---- bluez objects"
  dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects 2>&1 \
    | grep -E 'object path|string "org.bluez' | head -40
  echo "---- kernel messages about Bluetooth"
  dmesg | grep -iE 'bluetooth|hci|vhci' | tail -n 30
  if [[ -s "$TESTBED_WORK/bluetoothd.log" ]]; then
    echo "---- bluetoothd log lines about hci0"
    grep -E 'hci0|index 0' "$TESTBED_WORK/bluetoothd.log" | head -40
  fi
  if [[ -d /run/systemd/system ]]; then
    systemctl --no-pager status bluetooth testbed-btvirt 2>&1 | head -40
  fi
  show_diagnostics
  echo "testbed: 0 passed, 1 failed"
  exit 1
}

# show_diagnostics: what a failure needs to be understood from the CI log alone. (Under systemd
# the daemons' logs are in the journal.)
show_diagnostics() {
  if [[ -s "$TESTBED_WORK/bleadvd.log" ]]; then
    echo "---- bleadvd log (last 60 lines)"
    tail -n 60 "$TESTBED_WORK/bleadvd.log"
  fi
  if [[ -d /run/systemd/system ]] && systemctl cat bleadvd > /dev/null 2>&1; then
    echo "---- journal of bleadvd.service (last 60 lines)"
    journalctl -u bleadvd --no-pager -n 60
  fi
  if [[ -s "$TESTBED_WORK/bluetoothd.log" ]]; then
    echo "---- bluetoothd log (last 80 lines)"
    tail -n 80 "$TESTBED_WORK/bluetoothd.log"
  else
    echo "---- journal of bluetooth.service (last 80 lines)"
    journalctl -u bluetooth --no-pager -n 80
  fi
  if bumble_controllers; then
    echo "---- Bumble's controllers (testbed/controllers.py: faults acted on, what they sent, Bumble's warnings; last 30 lines)"
    controllers_log 2>&1 | tail -n 30
  fi
  echo "---- HCI capture, decoded (last 150 lines)"
  btmon -r "$TESTBED_WORK/hci.btsnoop" 2>/dev/null | tail -n 150
  echo "---- end of diagnostics"
}
