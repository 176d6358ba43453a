#!/usr/bin/env bash
# Installs the Debian packages bleadvd needs to build and run its tests (not the VM test bed:
# testbed/setup.sh does that). Idempotent: runs apt-get only when something is missing.
#
#   scripts/install-deps.sh
set -euo pipefail
# shellcheck source=testbed/common.sh
. "$(dirname "$0")/../testbed/common.sh"

packages=(
  libdbus-1-dev pkg-config   # CDBus: the libdbus-1 headers and library
  libssl-dev                 # CCrypto: OpenSSL's header, and libcrypto, loaded for encrypted BTHome
  dbus                       # dbus-daemon, dbus-send, dbus-monitor for the bus tests
  systemd                    # busctl, an independent D-Bus peer; systemd-analyze
  python3-dbus python3-gi    # the Python D-Bus peer the tests call (dbus-python + GLib)
  dpkg-dev lintian           # make deb: dpkg-shlibdeps computes Depends, lintian checks the package
  wpasupplicant iproute2     # make test-wpa-roundtrip: Improv's joins saved and read back by the real wpa_supplicant
)
install_packages install-deps "${packages[@]}"
