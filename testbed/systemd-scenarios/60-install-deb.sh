#!/usr/bin/env bash
# The package as a user meets it, under systemd as PID 1 (testbed/run.sh --systemd):
# - `apt install ./bleadvd_*.deb` (the .deb from `make deb`; apt resolves its Depends against
#   the suite's packages, libssl3t64 for libssl3 on trixie and sid) creates the user, loads the
#   bus policy, enables and starts the unit; the unit is active only once READY=1 came, which bleadvd sends once the
#   example config's enabled advertisement is registered (ActiveInstances, and hci1 hears it);
# - the process runs as user bleadvd with no capabilities, inside the unit's sandbox
#   (systemctl show and /proc/PID facts); the journal has its start-up lines with their
#   priorities; `systemd-analyze security` rates the running unit;
# - bleadvctl: root and a member of group bleadvd may turn advertising off and on; another user
#   is refused (exit 1, the documented message) and may read the status;
# - the config is root:bleadvd-config 0640 (it may hold BTHome keys): the daemon reads it through
#   that group (the unit's SupplementaryGroups=), and a member of group bleadvd, who may control
#   bleadvd, can read neither it nor the state directory (#78 item 8); the join program for
#   wpa_supplicant is bleadvd by that name;
# - a read program runs as user bleadvd, without capabilities or network (a central reads what
#   it printed).
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

deb=$(ls "$TESTBED_BUILD"/bleadvd_*-1_"$(dpkg --print-architecture)".deb | tail -n1)
started=$(date +%s.%N)
# The guest has no network and no package lists: apt must find every dependency installed.
# (Not --no-download: bookworm's apt 2.6 then fails on a local .deb, "Pathname to install is
# not absolute".)
DEBIAN_FRONTEND=noninteractive apt-get install -y "$deb" > "$TESTBED_WORK/apt-install.out" 2>&1 \
  || { cat "$TESTBED_WORK/apt-install.out"; fail "apt install ./$(basename "$deb") failed"; }
echo "apt install ./$(basename "$deb"): $(elapsed "$started") s, the unit's start included"
echo "    Depends: $(dpkg-deb -f "$deb" Depends)"
echo "    met by: $(dpkg-query -W -f='${Package} ${Version}, ' libc6 libdbus-1-3 'libssl3*' 2>/dev/null | sed 's/, $//')"
[[ "$(systemctl is-enabled bleadvd)" == enabled ]] || fail "the unit is not enabled after apt install"
[[ "$(systemctl is-active bleadvd)" == active ]] || { systemctl --no-pager status bleadvd >&2; fail "the unit is not active after apt install"; }
# The config may hold BTHome keys: root writes it, the daemon reads it (group bleadvd-config,
# which the unit gives it alone), no one else.
mode=$(stat -c '%a %U:%G' /etc/bleadvd/bleadvd.toml)
echo "    /etc/bleadvd/bleadvd.toml: $mode; /usr/libexec/bleadvd/join-wpa-supplicant -> $(readlink /usr/libexec/bleadvd/join-wpa-supplicant)"
[[ "$mode" == "640 root:bleadvd-config" ]] || fail "the config is $mode, not 640 root:bleadvd-config"
[[ -z "$(getent group bleadvd-config | cut -d: -f4)" ]] || fail "group bleadvd-config has members: $(getent group bleadvd-config)"
runuser -u nobody -- cat /etc/bleadvd/bleadvd.toml > /dev/null 2>&1 && fail "user nobody reads the config"
[[ "$(/usr/libexec/bleadvd/join-wpa-supplicant --help | head -n1)" == "usage: IMPROV_SSID_HEX=HEX join-wpa-supplicant"* ]] \
  || fail "the join program for wpa_supplicant does not answer --help"
# Type=notify: `start` returned at READY=1, so the advertisement is registered already.
[[ "$(active_instances)" == 1 ]] || fail "active, but hci0 has $(active_instances) advertisements registered, not 1"
exec_at=$(unit_property ExecMainStartTimestampMonotonic)
ready_at=$(unit_property ActiveEnterTimestampMonotonic)
echo "exec -> READY=1 (active): $(( (ready_at - exec_at) / 1000 )) ms; hci0 has 1 advertisement registered"
observe_until 30 "$(name_or manufacturer=0xffff:01020304 Thermo-1)" > "$TESTBED_WORK/heard.txt" \
  || fail "hci1 did not hear Thermo-1: $(cat "$TESTBED_WORK/heard.txt")"
echo "hci1 hears: $(grep -m1 0xffff:01020304 "$TESTBED_WORK/heard.txt")"
expect_name Thermo-1

pid=$(unit_property MainPID)
user=$(ps -o user= -p "$pid")
status=/proc/$pid/status
echo "process $pid runs as $user; $(grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' "$status" | tr -s '\t\n' '  ')"
[[ "$user" == bleadvd ]] || fail "bleadvd runs as $user"
grep -qE '^CapEff:\s+0+$' "$status" || fail "bleadvd has effective capabilities"
grep -qE '^CapBnd:\s+0+$' "$status" || fail "bleadvd's bounding set is not empty"
grep -qE '^NoNewPrivs:\s+1$' "$status" || fail "NoNewPrivs is not set"
grep -qE '^Seccomp:\s+2$' "$status" || fail "no seccomp filter (SystemCallFilter)"
[[ "$(readlink /proc/"$pid"/ns/net)" != "$(readlink /proc/1/ns/net)" ]] || fail "not in a network namespace of its own (PrivateNetwork)"
[[ "$(readlink /proc/"$pid"/ns/user)" != "$(readlink /proc/1/ns/user)" ]] || fail "not in a user namespace of its own (PrivateUsers)"
awk '$5 == "/" { print $6 }' /proc/"$pid"/mountinfo | grep -qw ro || fail "/ is writable for bleadvd (ProtectSystem=strict)"
awk '$5 == "/var/lib/bleadvd" { print $6 }' /proc/"$pid"/mountinfo | grep -qw rw || fail "its state directory is not writable for it"
echo "sandbox: own network and user namespaces, / read-only, /var/lib/bleadvd writable; systemctl show:"
systemctl show bleadvd -p ProtectSystem -p PrivateUsers -p PrivateDevices -p RestrictAddressFamilies \
  -p MemoryDenyWriteExecute -p CapabilityBoundingSet -p StateDirectory | sed 's/^/    /'
ls -ld /var/lib/bleadvd | awk '{ print "    " $1, $3, $4, $NF }'

echo "start-up lines in the journal (priority: message):"
journalctl -u bleadvd _SYSTEMD_INVOCATION_ID="$(unit_property InvocationID)" -o json --output-fields=PRIORITY,MESSAGE \
  | python3 -c 'import json, sys; [print("    %s: %s" % (e["PRIORITY"], e["MESSAGE"])) for e in map(json.loads, sys.stdin)]' \
  | tee "$TESTBED_WORK/journal.txt"
grep -qE '^    5: ready:' "$TESTBED_WORK/journal.txt" || fail "no 'ready:' line at priority 5 (notice) in the journal"
if grep -qE '^    [0-3]: ' "$TESTBED_WORK/journal.txt"; then fail "an error at start-up"; fi
# One thread, no worker of libdispatch's (whose start logged "Failed to set thread priority").
if grep -q 'thread priority' "$TESTBED_WORK/journal.txt"; then fail "libdispatch started a worker thread"; fi
threads=$(ls /proc/"$pid"/task | wc -l)
echo "threads of bleadvd under systemd: $threads"
[[ $threads == 1 ]] || fail "bleadvd runs $threads threads, not 1"
exposure=$(systemd-analyze security bleadvd.service | sed -nE 's/.*Overall exposure level for bleadvd.service: ([0-9.]+) (.*)/\1 \2/p')
echo "systemd-analyze security bleadvd.service (online, the running unit): $exposure"
awk -v e="${exposure%% *}" 'BEGIN { exit !(e != "" && e <= 1.5) }' || fail "exposure above 1.5"

echo "bleadvctl:"
/usr/bin/bleadvctl off heart && [[ "$(active_instances)" == 0 ]] || fail "root: off did not unregister"
/usr/bin/bleadvctl on heart && [[ "$(active_instances)" == 1 ]] || fail "root: on did not register"
echo "    root: off, on"
useradd --create-home --groups bleadvd alice
useradd --create-home bob
runuser -u alice -- /usr/bin/bleadvctl off heart && [[ "$(active_instances)" == 0 ]] || fail "alice (group bleadvd): off did not unregister"
runuser -u alice -- /usr/bin/bleadvctl on heart && [[ "$(active_instances)" == 1 ]] || fail "alice (group bleadvd): on did not register"
echo "    alice, in group bleadvd: off, on"
# Controlling bleadvd is not reading its keys (#78 item 8): alice may turn it off and on, not read
# the config or the state directory (counters, the bond record); the daemon, with group
# bleadvd-config from its unit, read the config at its start and reads it again on reload.
code=0
denied=$(runuser -u alice -- cat /etc/bleadvd/bleadvd.toml 2>&1 > /dev/null) || code=$?
[[ $code != 0 ]] || fail "alice (group bleadvd) reads the config"
echo "    alice, in group bleadvd: cat /etc/bleadvd/bleadvd.toml -> exit $code: $denied"
code=0
denied=$(runuser -u alice -- ls /var/lib/bleadvd 2>&1 > /dev/null) || code=$?
[[ $code != 0 ]] || fail "alice (group bleadvd) lists the state directory"
echo "    alice: ls /var/lib/bleadvd -> exit $code: $denied"
code=0
denied=$(runuser -u alice -- /usr/bin/bleadvctl preview 2>&1 > /dev/null) || code=$?
[[ $code == 2 && "$denied" == *"cannot be read"* ]] || fail "alice's preview of the installed config: exit $code: $denied"
cp /etc/bleadvd/bleadvd.toml ~alice/copy.toml && chown alice: ~alice/copy.toml
runuser -u alice -- /usr/bin/bleadvctl preview --config ~alice/copy.toml > /dev/null || fail "alice cannot preview a copy of her own"
echo "    alice: preview of the installed config -> exit $code: $denied; of a copy of her own: exit 0"
groups_line=$(grep '^Groups:' "/proc/$(unit_property MainPID)/status" | tr -s '\t' ' ')
echo "    the daemon's $groups_line (bleadvd-config is $(getent group bleadvd-config | cut -d: -f3); inside its user namespace it is unmapped)"
[[ " ${groups_line#Groups:} " == *" $(getent group bleadvd-config | cut -d: -f3) "* ]] || fail "the daemon does not have group bleadvd-config"
systemctl reload bleadvd || fail "the reload (bleadvctl reload, the daemon reading its config again) failed"
echo "    systemctl reload: the daemon read the config again"
code=0
refused=$(runuser -u bob -- /usr/bin/bleadvctl off heart 2>&1) || code=$?
echo "    bob, not in the group: off -> exit $code: $refused"
[[ $code == 1 ]] || fail "bob's off: exit $code, not 1"
expect_line "permission denied by bleadvd's bus policy: root may do everything, members of group bleadvd on, off, set and reload" "$refused"
[[ "$refused" != *"Rejected send message"* ]] || fail "bob's refusal carries the bus's own text: $refused"
for command in "forget AA:BB:CC:DD:EE:FF" "bonds" "pair 10" "improv authorize"; do
  code=0
  # shellcheck disable=SC2086
  refused=$(runuser -u alice -- /usr/bin/bleadvctl $command 2>&1) || code=$?
  [[ $code == 1 && "$refused" == *"permission denied by bleadvd's bus policy"* ]] \
    || fail "alice (group bleadvd): $command -> exit $code: $refused (root's alone)"
done
echo "    alice, in group bleadvd: forget, bonds, pair and improv authorize refused (root's alone)"
# Secured values: bleadvd (user bleadvd, in its sandbox) reads alice's groups as dbus-daemon
# does and takes her watch's Subscribe; bob's is refused, and his watch says so.
runuser -u alice -- timeout 3 /usr/bin/bleadvctl watch > /dev/null 2> "$TESTBED_WORK/alice-watch.err" || true
runuser -u bob -- timeout 3 /usr/bin/bleadvctl watch > /dev/null 2> "$TESTBED_WORK/bob-watch.err" || true
grep -q "left out" "$TESTBED_WORK/alice-watch.err" && fail "alice's watch was refused secured values: $(cat "$TESTBED_WORK/alice-watch.err")"
expect_line "the values of secured characteristics are left out" "$(cat "$TESTBED_WORK/bob-watch.err")"
echo "    watch: alice subscribed (secured values shown), bob not: $(cat "$TESTBED_WORK/bob-watch.err")"
[[ "$(active_instances)" == 1 ]] || fail "bob's refused off changed what is on air"
runuser -u bob -- /usr/bin/bleadvctl status > "$TESTBED_WORK/bob-status.txt" || fail "bob may not read the status"
echo "    bob: status -> $(tr -s ' \n' ' ' < "$TESTBED_WORK/bob-status.txt")"
grep -q heart "$TESTBED_WORK/bob-status.txt" || fail "bob's status does not show heart"

# Bounded group powers (#64 item 8): alice holds four watches; her fifth is told why it gets no
# secured values, and root's still gets them.
# A watch prints a line only once it has subscribed (its Subscribe comes before its match rules),
# so the fifth is started when all four have printed a value alice sets, however slow the guest.
watches=()
for n in 1 2 3 4; do
  runuser -u alice -- /usr/bin/bleadvctl watch > "$TESTBED_WORK/alice-watch-$n.out" 2>&1 & watches+=($!)
done
subscribed=0
for battery in $(seq 50 79); do
  runuser -u alice -- /usr/bin/bleadvctl set kitchen battery=$battery > /dev/null || fail "alice's set kitchen battery=$battery failed"
  # (grep exits 1 while no watch has printed: not a failure here.)
  subscribed=$({ grep -l "kitchen" "$TESTBED_WORK"/alice-watch-?.out 2> /dev/null || true; } | wc -l)
  [[ $subscribed == 4 ]] && break
  sleep 1
done
[[ $subscribed == 4 ]] || fail "alice's four watches did not all print a value in 30 s: $(cat "$TESTBED_WORK"/alice-watch-?.out)"
! grep -h "left out" "$TESTBED_WORK"/alice-watch-?.out || fail "one of alice's first four watches was refused its subscription"
runuser -u alice -- timeout 3 /usr/bin/bleadvctl watch > /dev/null 2> "$TESTBED_WORK/alice-fifth.err" || true
timeout 3 /usr/bin/bleadvctl watch > /dev/null 2> "$TESTBED_WORK/root-watch.err" || true
kill "${watches[@]}" 2> /dev/null || true
wait "${watches[@]}" 2> /dev/null || true
expect_line "this user has 4 subscriptions already" "$(cat "$TESTBED_WORK/alice-fifth.err")"
[[ ! -s "$TESTBED_WORK/root-watch.err" ]] || fail "root's watch beside alice's four was refused: $(cat "$TESTBED_WORK/root-watch.err")"
echo "    alice's fifth watch: $(cat "$TESTBED_WORK/alice-fifth.err"); root's beside them subscribed"

# A local user's signal flood (#64 item 7): four processes as nobody send bleadvd's unique name
# signals of 262,144 values each for 20 s. bleadvd reads no body it did not subscribe to: the
# watchdog (WatchdogSec=) never fires, status is answered throughout, RSS stays flat.
pid=$(unit_property MainPID) restarts=$(unit_property NRestarts)
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }
# CPU time (utime + stime, in clock ticks) of a process.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
bus_pid=$(systemctl show -P MainPID dbus.service)
rss_before=$(rss) cpu_before=$(ticks "$pid") bus_before=$(ticks "$bus_pid")
flooders=()
for n in 1 2 3 4; do
  runuser -u nobody -- "$(decoders_python)" "$TESTBED_ROOT/testbed/flood_signals.py" --seconds 20 > "$TESTBED_WORK/flood-$n.out" 2>&1 &
  flooders+=($!)
done
slowest=0
for _ in $(seq 20); do
  started=$(date +%s%N)
  bleadvctl status > /dev/null || fail "status was not answered during the flood"
  took=$(( ($(date +%s%N) - started) / 1000000 ))
  (( took > slowest )) && slowest=$took
  sleep 1
done
wait "${flooders[@]}" || true
rss_after=$(rss) cpu=$(( $(ticks "$pid") - cpu_before )) bus_cpu=$(( $(ticks "$bus_pid") - bus_before ))
sed 's/^/    nobody: /' "$TESTBED_WORK"/flood-*.out
[[ "$(unit_property MainPID)" == "$pid" && "$(unit_property NRestarts)" == "$restarts" ]] \
  || fail "bleadvd was restarted during the flood (PID $pid -> $(unit_property MainPID), NRestarts $restarts -> $(unit_property NRestarts))"
! journalctl -u bleadvd --no-pager -o cat | grep -qi "watchdog timeout" || fail "the watchdog fired during the flood"
(( rss_after < rss_before + 8192 )) || fail "bleadvd's RSS grew from $rss_before kB to $rss_after kB during the flood"
echo "    signal flood (4 x nobody, 20 s): same PID, NRestarts $restarts, status answered in at most $slowest ms, RSS $rss_before -> $rss_after kB; CPU: bleadvd $cpu ticks, dbus-daemon $bus_cpu (of $(getconf CLK_TCK) a second)"

# A read program (#66 item 1) runs as bleadvd does: as user bleadvd, without capabilities, with
# no network but loopback. A central (bleak on hci1, through bluetoothd) reads what it printed.
# The program and the config are put back however the step ends: 62 checks what dpkg -r leaves.
probe=6e400041-b5a3-f393-e0a9-e50e24dcca9e
mkdir -p /usr/local/bin
cp /etc/bleadvd/bleadvd.toml "$TESTBED_WORK/bleadvd.toml.orig"
put_back_probe() {
  cp "$TESTBED_WORK/bleadvd.toml.orig" /etc/bleadvd/bleadvd.toml
  rm -f /usr/local/bin/bleadvd-probe
  systemctl reload bleadvd 2> /dev/null || true
}
on_exit put_back_probe
cat > /usr/local/bin/bleadvd-probe <<'PROGRAM'
#!/bin/sh
printf 'user=%s caps=%s net=%s\n' "$(id -un)" "$(awk '/^CapEff/ { print $2 }' /proc/self/status)" "$(ls /sys/class/net | tr '\n' ' ' | sed 's/ $//')"
PROGRAM
chmod 755 /usr/local/bin/bleadvd-probe
cat >> /etc/bleadvd/bleadvd.toml <<CONFIG

[service.probe]
uuid = "6e400040-b5a3-f393-e0a9-e50e24dcca9e"

[service.probe.characteristic.sandbox]
uuid = "$probe"
format = "utf8"
flags = ["read"]
read = "/usr/local/bin/bleadvd-probe"
CONFIG
systemctl reload bleadvd || fail "the reload with a read program failed: $(journalctl -u bleadvd -n 3 --no-pager -o cat)"
address=$(adapter_address hci0)
# read_probe: bleak's connection, discovery and read; the value, or nothing.
read_probe() {
  observe_until 30 "device $address" "0000180d-0000-1000-8000-00805f9b34fb" > /dev/null || true
  "$(decoders_python)" "$TESTBED_ROOT/testbed/gatt_central.py" "$address" --read "$probe" > "$TESTBED_WORK/probe.out" 2>&1 || true
  python3 -c 'import sys; print(bytes.fromhex(sys.argv[1]).decode(errors="replace"))' "$(sed -n "s/^read $probe = //p" "$TESTBED_WORK/probe.out")"
}
started=$(date '+%H:%M:%S.%N')
value=$(read_probe)
if [[ -z "$value" ]] && grep -q "BleakError" "$TESTBED_WORK/probe.out"; then
  # The link failed, not the program: said with the HCI record (links, SMP) and the journal,
  # and tried once more on a new link. (Twice it was a bond 65 left on hci0 when it failed:
  # bluetoothd raised the link's security with the key it kept, hci1's BlueZ had none and
  # paired anew, hci0 refused, the link ended; 65 now forgets its bond however it ends.)
  echo "    the central's link failed: $(grep -m1 BleakError "$TESTBED_WORK/probe.out"); the record since it began (links, ATT):"
  record_since "$started" | grep -E "Disconnect|Reason|Connection Complete|Device Connected|SMP:|Encryption Change|already" | awk 'NR <= 40' | sed 's/^/        /'
  journalctl -u bleadvd --since "-60s" --no-pager -o cat | tail -n 5 | sed 's/^/        bleadvd: /'
  echo "    again, on a new link"
  value=$(read_probe)
fi
echo "    a central read the read program's output: $value"
[[ "$value" =~ user=bleadvd\ caps=0+\ net=lo$ ]] \
  || fail "the read program did not run as user bleadvd without capabilities or network: $(cat "$TESTBED_WORK/probe.out")"
