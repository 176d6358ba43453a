#!/usr/bin/env bash
# Installs the Debian packages bleadvd needs to build and run its tests (not the VM test bed:
# testbed/setup.sh does that). Idempotent: runs apt-get only when something is missing.
#
#   scripts/install-deps.sh
set -euo pipefail

packages=(
  libdbus-1-dev pkg-config   # CDBus: the libdbus-1 headers and library
  libssl-dev                 # CCrypto: OpenSSL's header, and libcrypto, loaded for encrypted BTHome
  dbus                       # dbus-daemon, dbus-send, dbus-monitor for the bus tests
  systemd                    # busctl, an independent D-Bus peer; systemd-analyze
  python3-dbus python3-gi    # the Python D-Bus peer the tests call (dbus-python + GLib)
  dpkg-dev lintian           # make deb: dpkg-shlibdeps computes Depends, lintian checks the package
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
