#!/usr/bin/env bash
# The package's upgrade and removal under systemd, after 60 and 61:
# - `apt install` of a newer build over a running one: advertising again afterwards, with exactly
#   one restart of the unit (prerm leaves it running, postinst restarts it); the install it
#   upgrades is laid out as every bleadvd before #78 item 8 left it (config root:bleadvd 0640,
#   no group bleadvd-config), and the upgrade makes the config root:bleadvd-config 0640, says
#   so, and the daemon reads it; a member of group bleadvd cannot;
# - a reinstall over root:bleadvd 0640 with group bleadvd-config there (what an older package
#   installed again, a downgrade, leaves) lays it out again, saying so; over an admin's own
#   root:bleadvd 0644 it leaves it, with a warning;
# - `dpkg -r`: the unit stopped, nothing registered, binaries, unit, man pages and bus policy
#   gone; left: the config, the enablement (kept for a reinstall, as Debian does) and the state
#   directory (encrypted BTHome's counters, which belong with the config's keys), and dpkg's
#   record of them;
# - `dpkg --purge`: nothing named bleadvd left on the file system (the system user stays, as
#   Debian leaves system users).
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

arch=$(dpkg --print-architecture)
newer=$(ls "$TESTBED_BUILD"/bleadvd_*-2_"$arch".deb | tail -n1)
systemctl start bleadvd
[[ "$(active_instances)" == 1 ]] || fail "before the upgrade: $(active_instances) registered, not 1"
before=$(unit_property InvocationID)
# The older layout: what every package's postinst before #78 item 8 made of the config, and no
# group bleadvd-config (the running daemon keeps the gid it was started with).
chown root:bleadvd /etc/bleadvd/bleadvd.toml && chmod 0640 /etc/bleadvd/bleadvd.toml
groupdel bleadvd-config
runuser -u alice -- cat /etc/bleadvd/bleadvd.toml > /dev/null || fail "the older layout: alice (group bleadvd) cannot read the config"
echo "before the upgrade, as older packages left it: /etc/bleadvd/bleadvd.toml $(stat -c '%a %U:%G' /etc/bleadvd/bleadvd.toml), alice (group bleadvd) reads it"
cursor=$(journalctl -n 0 --show-cursor | sed -n 's/^-- cursor: //p')
started=$(date +%s.%N)
DEBIAN_FRONTEND=noninteractive apt-get install -y "$newer" > "$TESTBED_WORK/apt-upgrade.out" 2>&1 \
  || { cat "$TESTBED_WORK/apt-upgrade.out"; fail "the upgrade failed"; }
took=$(elapsed "$started")
starts=$(journalctl -u bleadvd --after-cursor "$cursor" --no-pager -o cat | grep -c '^Started ' || true)
[[ "$(dpkg-query -W -f='${Version}' bleadvd)" == *-2 ]] || fail "not upgraded: $(dpkg-query -W -f='${Version}' bleadvd)"
[[ "$(systemctl is-active bleadvd)" == active && "$(active_instances)" == 1 ]] \
  || fail "after the upgrade: $(systemctl is-active bleadvd), $(active_instances) registered"
[[ "$starts" == 1 && "$(unit_property InvocationID)" != "$before" ]] || fail "the upgrade started the unit $starts times"
observe_until 30 "$(name_or manufacturer=0xffff:01020304 Thermo-1)" > /dev/null || fail "hci1 does not hear Thermo-1 after the upgrade"
echo "apt install ./$(basename "$newer") over the running $(basename "${newer/-2_/-1_}"): $took s, the unit restarted once, Thermo-1 heard again"
mode=$(stat -c '%a %U:%G' /etc/bleadvd/bleadvd.toml)
[[ "$mode" == "640 root:bleadvd-config" ]] || fail "after the upgrade the config is $mode, not 640 root:bleadvd-config"
grep -q "bleadvd: /etc/bleadvd/bleadvd.toml was root:bleadvd 640" "$TESTBED_WORK/apt-upgrade.out" || fail "the upgrade did not say it changed the layout: $(cat "$TESTBED_WORK/apt-upgrade.out")"
runuser -u alice -- cat /etc/bleadvd/bleadvd.toml > /dev/null 2>&1 && fail "after the upgrade alice (group bleadvd) reads the config"
runuser -u alice -- /usr/bin/bleadvctl off heart && runuser -u alice -- /usr/bin/bleadvctl on heart || fail "after the upgrade alice cannot turn heart off and on"
systemctl reload bleadvd || fail "after the upgrade the daemon cannot reload its config"
echo "    the config is now $mode ($(grep -m1 'was root:bleadvd' "$TESTBED_WORK/apt-upgrade.out")); alice cannot read it, turns heart off and on; systemctl reload works"

# An older package installed again (a downgrade) lays the config out as before while group
# bleadvd-config stays: the next configure lays it out again.
chown root:bleadvd /etc/bleadvd/bleadvd.toml
DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall "$newer" > "$TESTBED_WORK/apt-reinstall.out" 2>&1 \
  || { cat "$TESTBED_WORK/apt-reinstall.out"; fail "the reinstall failed"; }
mode=$(stat -c '%a %U:%G' /etc/bleadvd/bleadvd.toml)
[[ "$mode" == "640 root:bleadvd-config" ]] || fail "the reinstall left root:bleadvd 640 as $mode, not 640 root:bleadvd-config"
grep -q "bleadvd: /etc/bleadvd/bleadvd.toml was root:bleadvd 640" "$TESTBED_WORK/apt-reinstall.out" \
  || fail "the reinstall did not say it changed the layout: $(cat "$TESTBED_WORK/apt-reinstall.out")"
echo "    reinstall over root:bleadvd 640 with group bleadvd-config there: laid out again, $mode"
# An admin's own choice is theirs: a reinstall leaves it and warns that everyone reads it.
chown root:bleadvd /etc/bleadvd/bleadvd.toml && chmod 0644 /etc/bleadvd/bleadvd.toml
DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall "$newer" > "$TESTBED_WORK/apt-reinstall2.out" 2>&1 \
  || { cat "$TESTBED_WORK/apt-reinstall2.out"; fail "the second reinstall failed"; }
mode=$(stat -c '%a %U:%G' /etc/bleadvd/bleadvd.toml)
[[ "$mode" == "644 root:bleadvd" ]] || fail "the reinstall changed the admin's root:bleadvd 644 to $mode"
warning=$(grep -m1 "bleadvd: warning: /etc/bleadvd/bleadvd.toml is root:bleadvd 644, left as it is" "$TESTBED_WORK/apt-reinstall2.out") \
  || fail "no warning at the reinstall: $(cat "$TESTBED_WORK/apt-reinstall2.out")"
echo "    reinstall over the admin's root:bleadvd 644: left; $warning"
chown root:bleadvd-config /etc/bleadvd/bleadvd.toml && chmod 0640 /etc/bleadvd/bleadvd.toml

systemctl is-enabled bleadvd > /dev/null || fail "the upgrade disabled the unit"
dpkg -r bleadvd > "$TESTBED_WORK/dpkg-remove.out" 2>&1 || { cat "$TESTBED_WORK/dpkg-remove.out"; fail "dpkg -r failed"; }
[[ "$(systemctl is-active bleadvd)" != active ]] || fail "still running after dpkg -r"
[[ "$(active_instances)" == 0 ]] || fail "after dpkg -r: $(active_instances) still registered"
left=$(leftovers)
# dpkg keeps the package's file list and postrm until the purge that still needs them.
expected=$'/etc/bleadvd\n/etc/bleadvd/bleadvd.toml\n/etc/systemd/system/multi-user.target.wants/bleadvd.service\n/var/lib/bleadvd\n/var/lib/dpkg/info/bleadvd.list\n/var/lib/dpkg/info/bleadvd.postrm\n/var/lib/systemd/deb-systemd-helper-enabled/bleadvd.service.dsh-also\n/var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/bleadvd.service'
echo "dpkg -r: stopped, nothing registered; left:"
printf '%s\n' "$left" | sed 's/^/    /'
[[ "$left" == "$expected" ]] || fail "expected only the config, the enablement and the state to be left"
[[ ! -e /usr/share/dbus-1/system.d/org.bleadvd.Advertiser.conf ]] || fail "the bus policy is still there"

dpkg --purge bleadvd > "$TESTBED_WORK/dpkg-purge.out" 2>&1 || { cat "$TESTBED_WORK/dpkg-purge.out"; fail "dpkg --purge failed"; }
left=$(leftovers)
[[ -z "$left" ]] || fail "dpkg --purge left: $left"
echo "dpkg --purge: nothing named bleadvd left; the user stays: $(getent passwd bleadvd)"
