#!/usr/bin/env bash
# Installs and caches what the BlueZ test bed VM needs. Idempotent: a second run only checks.
#
#   testbed/setup.sh [STACK...] install packages, fetch the kernel, install virtme-ng, build
#                               the systemd test bed's Debian image of each STACK with its
#                               kernel (testbed/image.sh: bookworm, trixie, sid, or SUITE-arm64
#                               for a 64-bit Arm one; default: bookworm)
#
# Everything downloaded lands in $BLEADVD_TESTBED_CACHE (default: .testbed-cache in the repo,
# which the guest sees because the work tree is shared into the VM).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testbed/common.sh
. "$here/common.sh"

log() { printf 'testbed-setup: %s\n' "$*" >&2; }
suites=("$@")
((${#suites[@]})) || suites=(bookworm)
started=$(date +%s)

packages=(qemu-system-x86 busybox-static kmod bluez bluez-test-tools bluez-test-scripts
          dbus python3-dbus python3-gi python3-venv
          mmdebstrap e2fsprogs  # the systemd test bed's Debian image (testbed/image.sh)
          gcc pkg-config libglib2.0-dev patch curl xz-utils)  # btvirt and btmon built (testbed/bluez)
# An Arm stack: its machine (qemu-system-aarch64), qemu-user to set its image up here, curl
# and xz for its busybox (below).
[[ " ${suites[*]} " == *-arm64\ * ]] && packages+=(qemu-system-arm qemu-user-static binfmt-support arch-test curl xz-utils)
install_packages testbed-setup "${packages[@]}"

mkdir -p "$TESTBED_CACHE"
if [[ " ${suites[*]} " == *-arm64\ * ]]; then
  enable_arm64_programs
  if [[ ! -x "$TESTBED_CACHE/busybox-arm64" ]]; then
    # vng's initramfs for an Arm guest needs an Arm busybox: trixie's busybox-static.
    log "fetching busybox-static for arm64"
    mirror=http://deb.debian.org/debian
    pool=$(curl -fsS "$mirror/dists/trixie/main/binary-arm64/Packages.xz" | xz -dc \
      | awk '/^Package: busybox-static$/ {p = 1} p && /^Filename:/ && !found {print $2; found = 1}')
    curl -fsS "$mirror/$pool" -o "$TESTBED_CACHE/busybox-static.deb"
    dpkg-deb --fsys-tarfile "$TESTBED_CACHE/busybox-static.deb" | tar -xO ./usr/bin/busybox > "$TESTBED_CACHE/busybox-arm64.tmp"
    chmod 755 "$TESTBED_CACHE/busybox-arm64.tmp" && mv "$TESTBED_CACHE/busybox-arm64.tmp" "$TESTBED_CACHE/busybox-arm64"
    rm -f "$TESTBED_CACHE/busybox-static.deb"
  fi
fi
if [[ ! -s "$TESTBED_CACHE/kernel-version" ]]; then
  pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [[ -n "$pkg" ]] || { log "cannot find the kernel package behind linux-image-amd64 (apt-get update?)"; exit 1; }
  log "fetching $pkg"
  rm -rf "$TESTBED_CACHE/kernel" && mkdir -p "$TESTBED_CACHE/kernel"
  (cd "$TESTBED_CACHE" && rm -f linux-image-*.deb && apt-get download -qq -o APT::Sandbox::User=root "$pkg")
  dpkg-deb -x "$TESTBED_CACHE"/linux-image-*.deb "$TESTBED_CACHE/kernel"
  rm -f "$TESTBED_CACHE"/linux-image-*.deb
  ls "$TESTBED_CACHE/kernel/lib/modules" | head -n1 > "$TESTBED_CACHE/kernel-version"
fi
kver=$(cat "$TESTBED_CACHE/kernel-version")
# The guest loads modules from the host's /lib/modules (the root file system is shared).
if [[ ! -f "/lib/modules/$kver/modules.dep" ]]; then
  log "installing modules for $kver into /lib/modules"
  mkdir -p /lib/modules
  cp -a "$TESTBED_CACHE/kernel/lib/modules/$kver" /lib/modules/
  depmod "$kver"
fi

if [[ ! -x "$TESTBED_VNG" ]]; then
  log "installing virtme-ng into $TESTBED_CACHE/venv"
  /usr/bin/python3 -m venv "$TESTBED_CACHE/venv"
  "$TESTBED_CACHE/venv/bin/pip" install -q --disable-pip-version-check "virtme-ng==$VIRTME_NG_VERSION"
fi
if [[ ! -x "$TESTBED_CACHE/decoders/bin/python" ]] || ! "$TESTBED_CACHE/decoders/bin/python" -c "import bthome_ble, beacontools; from importlib.metadata import version; assert version('bleak') == '$BLEAK_VERSION' and version('bumble') == '$BUMBLE_VERSION'" 2>/dev/null; then
  # Decoders we did not write, for scenarios to check what hci1 hears: Home Assistant's BTHome
  # parser and a beacon parser; bleak, the GATT central of scenario 58; Bumble, the central
  # on a host stack of its own that pairs in scenario 65.
  log "installing bthome-ble $BTHOME_BLE_VERSION, beacontools $BEACONTOOLS_VERSION, bleak $BLEAK_VERSION and bumble $BUMBLE_VERSION into $TESTBED_CACHE/decoders"
  /usr/bin/python3 -m venv "$TESTBED_CACHE/decoders"
  "$TESTBED_CACHE/decoders/bin/pip" install -q --disable-pip-version-check \
    "bthome-ble==$BTHOME_BLE_VERSION" "beacontools==$BEACONTOOLS_VERSION" "bleak==$BLEAK_VERSION" "bumble==$BUMBLE_VERSION"
fi
# The virtual controllers' emulator, BlueZ's btvirt with testbed/bluez/btdev-links.patch, for
# each stack's guests: the host's own suite (the guest that shares this machine's root) and each
# image's (an Arm one keeps its packaged btvirt); and one btmon for every x86_64 guest.
for suite in "$(. /etc/os-release && echo "$VERSION_CODENAME")" "${suites[@]}"; do
  [[ "$suite" == *-arm64 ]] || "$here/bluez/build.sh" btvirt "$suite"
done
"$here/bluez/build.sh" btmon "$BTMON_SUITE"
# The Debian images the systemd test bed boots (testbed/run.sh --systemd [--stack SUITE]),
# each rebuilt when its recipe changes, and their kernels' modules where vng shares them from.
rm -f "$TESTBED_CACHE/systemd.img" "$TESTBED_CACHE/systemd.img.recipe"  # before there was an image per suite
for suite in "${suites[@]}"; do
  "$here/image.sh" "$suite"
  [[ "$suite" == bookworm ]] && continue
  [[ "$suite" == *-arm64 ]] && "$here/vhci-module.sh" "$suite"
  skver=$(cat "$TESTBED_CACHE/kernel-$suite/version")
  if ! cmp -s "$TESTBED_CACHE/kernel-$suite/lib/modules/$skver/modules.dep" "/lib/modules/$skver/modules.dep"; then
    log "installing modules for $skver ($suite) into /lib/modules"
    rm -rf "/lib/modules/$skver"
    cp -a "$TESTBED_CACHE/kernel-$suite/lib/modules/$skver" /lib/modules/
  fi
done
log "ready (kernel $kver, $(("$(date +%s)" - started)) s)"
