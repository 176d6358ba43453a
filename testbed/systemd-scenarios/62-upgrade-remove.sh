#!/usr/bin/env bash
# The package's upgrade and removal under systemd, after 60 and 61:
# - `apt install` of a newer build over a running one: advertising again afterwards, with exactly
#   one restart of the unit (prerm leaves it running, postinst restarts it);
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
observe_until 30 Thermo-1 > /dev/null || fail "hci1 does not hear Thermo-1 after the upgrade"
echo "apt install ./$(basename "$newer") over the running $(basename "${newer/-2_/-1_}"): $took s, the unit restarted once, Thermo-1 heard again"

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
