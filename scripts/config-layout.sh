# shellcheck shell=sh
# Sourced, not run: the config's owner, group and mode, in one place for the package's postinst
# (make-deb.sh puts this file in it) and `make install` on a live system (the Makefile sources it).
#
# Controlling bleadvd is not reading its keys (#78 item 8). Group bleadvd may control the daemon
# (the bus policy: on, off, set, reload, ...); the config holds BTHome keys and secured values,
# so it is root:bleadvd-config 0640: root writes it, and group bleadvd-config, which has no
# members and which the unit gives the daemon alone (SupplementaryGroups=), reads it.
#
#   bleadvd_config_layout CONFIG SYSUSERS   creates the user and groups (systemd-sysusers
#                                           SYSUSERS), then lays CONFIG out when it is as dpkg
#                                           unpacks it or as an older bleadvd left it
#
# It changes only what bleadvd's own packaging made, each time: root:root 0644 (dpkg's unpacked
# conffile, Debian's mode for /etc) and root:bleadvd 0640, the layout of every package and make
# install before this one (saying so: group bleadvd could read the keys). That one is converted
# whenever it is found, not only on the first upgrade: an older package installed again
# (a downgrade) lays it out again while group bleadvd-config stays. Anything else is the admin's
# choice and left as it is, with a warning on standard error when members of group bleadvd or
# everyone may read it.
bleadvd_config_layout() {
  systemd-sysusers "$2"
  config=$1
  [ -f "$config" ] || return 0
  bleadvd_now=$(stat -c '%U:%G %a' "$config")
  if [ "$bleadvd_now" = "root:root 644" ] || [ "$bleadvd_now" = "root:bleadvd 640" ]; then
    chown root:bleadvd-config "$config"
    chmod 0640 "$config"
    [ "$bleadvd_now" = "root:root 644" ] || echo "bleadvd: $config was $bleadvd_now (group bleadvd, who may control bleadvd, could read its keys); now root:bleadvd-config 640" >&2
    return 0
  fi
  bleadvd_group=$(stat -c '%G' "$config")
  bleadvd_mode=$(stat -c '%a' "$config")
  bleadvd_who=
  [ "$bleadvd_group" = bleadvd ] && [ $((0$bleadvd_mode & 040)) -ne 0 ] && bleadvd_who="members of group bleadvd, who may control bleadvd,"
  [ $((0$bleadvd_mode & 04)) -ne 0 ] && bleadvd_who="every local user"
  if [ -n "$bleadvd_who" ]; then
    echo "bleadvd: warning: $config is $bleadvd_now, left as it is; $bleadvd_who can read it (BTHome keys, secured values). bleadvd's layout: chown root:bleadvd-config $config; chmod 0640 $config (bleadvd.toml(5), FILES)" >&2
  fi
  return 0
}
