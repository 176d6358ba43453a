#!/usr/bin/env bash
# `sudo make install` and `make uninstall` under systemd, as the README tells a user who builds
# from source, after 62 purged the package:
# - make install; systemctl enable --now bleadvd: active once the example's advertisement is
#   registered, as user bleadvd, /usr/local/bin/bleadvctl (a link to bleadvd) answers; the config
#   is root:bleadvd-config 0640, as the package lays it out;
# - make uninstall: the unit stopped and disabled, nothing registered; left: the config and the
#   state directory (they go together: encrypted BTHome's counters belong with its keys).
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

[[ -z "$(leftovers)" ]] || fail "needs a system without bleadvd: $(leftovers)"
make --no-print-directory -C "$TESTBED_ROOT" install > "$TESTBED_WORK/make-install.out" 2>&1 \
  || { cat "$TESTBED_WORK/make-install.out"; fail "make install failed"; }
started=$(date +%s.%N)
systemctl enable --now bleadvd 2> /dev/null
echo "make install; systemctl enable --now bleadvd: active in $(elapsed "$started") s"
[[ "$(systemctl is-active bleadvd)" == active && "$(active_instances)" == 1 ]] \
  || fail "after enable --now: $(systemctl is-active bleadvd), $(active_instances) registered"
[[ "$(ps -o user= -p "$(unit_property MainPID)")" == bleadvd ]] || fail "not running as bleadvd"
[[ "$(unit_property ExecStart)" == *"path=/usr/local/sbin/bleadvd"* ]] || fail "the unit does not run /usr/local/sbin/bleadvd"
/usr/local/bin/bleadvctl status | grep -qE '^heart +advertisement +on' || fail "bleadvctl status does not show heart on"
[[ "$(readlink /usr/local/bin/bleadvctl)" == ../sbin/bleadvd ]] \
  || fail "/usr/local/bin/bleadvctl is not the link ../sbin/bleadvd: $(ls -l /usr/local/bin/bleadvctl)"
if readelf -S /usr/local/sbin/bleadvd | grep -q '\.symtab'; then fail "make install did not strip bleadvd"; fi
echo "    as bleadvd, from /usr/local/sbin (stripped: $(du -h /usr/local/sbin/bleadvd | cut -f1)); bleadvctl, a link to it: status shows heart on"
mode=$(stat -c '%a %U:%G' /etc/bleadvd/bleadvd.toml)
[[ "$mode" == "640 root:bleadvd-config" ]] || fail "make install left the config $mode, not 640 root:bleadvd-config"
echo "    /etc/bleadvd/bleadvd.toml: $mode (the daemon reads it through group bleadvd-config)"

make --no-print-directory -C "$TESTBED_ROOT" uninstall > "$TESTBED_WORK/make-uninstall.out" 2>&1 \
  || { cat "$TESTBED_WORK/make-uninstall.out"; fail "make uninstall failed"; }
[[ "$(systemctl is-active bleadvd)" != active ]] || fail "still running after make uninstall"
[[ "$(active_instances)" == 0 ]] || fail "after make uninstall: $(active_instances) still registered"
left=$(leftovers)
echo "make uninstall: stopped, nothing registered; left:"
printf '%s\n' "$left" | sed 's/^/    /'
[[ "$left" == $'/etc/bleadvd\n/etc/bleadvd/bleadvd.toml\n/var/lib/bleadvd' ]] || fail "expected only the config and the state to be left"
