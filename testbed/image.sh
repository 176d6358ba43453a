#!/usr/bin/env bash
# Builds the disk image of the systemd test bed for one Debian suite: a minimal Debian whose
# PID 1 is systemd, with the suite's own dbus.service and bluetooth.service, as on a user's
# gateway, and the suite's kernel.
#
#   testbed/image.sh [STACK]   STACK: bookworm (default), trixie or sid, for this machine's
#                              architecture; trixie-arm64 (or SUITE-arm64) for a 64-bit Arm
#                              one, as on a Raspberry Pi (its programs run under qemu-user)
#     -> $TESTBED_CACHE/systemd-STACK.img (raw ext4), rebuilt when this file changes
#     -> $TESTBED_CACHE/kernel-STACK/ (vmlinuz-VERSION, lib/modules/VERSION, version), except
#        for bookworm, whose kernel testbed/setup.sh fetches for the host-root test bed too
#
# sid moves every day: its image is rebuilt when older than a day.
#
# The image holds no bleadvd: scenarios install it the way a user does (dpkg -i, make install).
# It holds one unit of ours, testbed-runner.service, which mounts the repository (shared by the
# host over 9p at the path the host has it, read-only) and runs testbed/systemd-guest.sh there.
# Boots take the image as a snapshot (qemu -snapshot): what a run writes is thrown away.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testbed/common.sh
. "$here/common.sh"

stack=${1:-bookworm}
suite=${stack%-arm64}
arch=amd64 console=ttyS0
[[ "$stack" == *-arm64 ]] && arch=arm64 console=ttyAMA0
case "$suite" in bookworm|trixie|sid) ;; *) echo "testbed-image: no stack $stack (bookworm, trixie or sid, -arm64 for Arm)" >&2; exit 2 ;; esac
image=$TESTBED_CACHE/systemd-$stack.img
stamp=$image.recipe
kernel=$TESTBED_CACHE/kernel-$stack
# The recipe: this file and the versions common.sh pins for the image's Python packages.
recipe=$(cat "$here/image.sh" "$here/common.sh" | sha256sum | cut -d' ' -f1)
if [[ -s "$image" && "$(cat "$stamp" 2>/dev/null)" == "$recipe" ]] \
   && [[ "$suite" != sid || -z "$(find "$image" -mmin +1440)" ]]; then
  exit 0
fi

log() { printf 'testbed-image: %s\n' "$*" >&2; }
started=$(date +%s)
root=$(mktemp -d "$TESTBED_CACHE/field-root.XXXXXX")
trap 'rm -rf "$root"' EXIT

# What a Bluetooth gateway has, plus what the scenarios use: btvirt (bluez-test-tools) for the
# two virtual controllers, python3-dbus/gi for the observer on hci1, BlueZ's example-advertisement (scenario 11), make and binutils (strip)
# for `make install`, a venv with the decoders we did not write (bthome-ble, beacontools),
# and the suite's kernel except on bookworm. For Improv Wi-Fi (scenario 66): NetworkManager and
# polkit as a gateway has them, hostapd and dnsmasq for the access point on a
# mac80211_hwsim radio; NetworkManager is not started at boot (scenario 66 starts it).
packages=systemd-sysv,dbus,bluez,bluez-test-tools,bluez-test-scripts,kmod,udev,procps,make,binutils,python3,python3-dbus,python3-gi,python3-venv
packages+=,network-manager,polkitd,wpasupplicant,hostapd,dnsmasq-base,iproute2
[[ "$stack" == bookworm ]] || packages+=,linux-image-$arch
log "bootstrapping Debian $suite for $arch ($packages)"
# sid's Release file is valid for a week; a mirror that is a snapshot (as this machine's is)
# serves one past that date. Signatures are still checked.
aptopts=()
[[ "$suite" == sid ]] && aptopts=(--aptopt='Acquire::Check-Valid-Until "false"')
mmdebstrap --quiet --variant=minbase --architectures="$arch" "${aptopts[@]}" --include="$packages" "$suite" "$root" http://deb.debian.org/debian
chroot "$root" python3 -m venv /opt/testbed-decoders
# pip in the image trusts what this machine trusts (a proxy's certificate authority, say).
cp -L /etc/ssl/certs/ca-certificates.crt "$root/tmp/host-ca.crt"
chroot "$root" env -u PIP_FIND_LINKS SSL_CERT_FILE=/tmp/host-ca.crt REQUESTS_CA_BUNDLE=/tmp/host-ca.crt PIP_CERT=/tmp/host-ca.crt \
  /opt/testbed-decoders/bin/pip install -q \
  --disable-pip-version-check "bthome-ble==$BTHOME_BLE_VERSION" "beacontools==$BEACONTOOLS_VERSION" "bleak==$BLEAK_VERSION" \
  "bumble==$BUMBLE_VERSION" "py-improv-ble-client==$IMPROV_BLE_CLIENT_VERSION"
rm -f "$root/tmp/host-ca.crt"
chroot "$root" systemctl disable --quiet NetworkManager.service NetworkManager-wait-online.service \
  NetworkManager-dispatcher.service wpa_supplicant.service 2> /dev/null || true
if [[ "$stack" != bookworm ]]; then
  # The kernel boots from the host (vng --run) and its modules are shared from the host's
  # /lib/modules (testbed/setup.sh puts them there): both leave the image.
  kver=$(ls "$root/usr/lib/modules" | head -n1)
  rm -rf "$kernel" && mkdir -p "$kernel/lib/modules"
  cp "$root/boot/vmlinuz-$kver" "$kernel/"
  cp -a "$root/usr/lib/modules/$kver" "$kernel/lib/modules/"
  echo "$kver" > "$kernel/version"
  rm -rf "$root/boot/"* "$root/usr/lib/modules/$kver"
fi

echo "bleadvd-$stack" > "$root/etc/hostname"
# The serial console is the run's output: no login prompt on it, no boot status over it.
for unit in getty.target serial-getty@.service console-getty.service; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
mkdir -p "$root/etc/systemd/system.conf.d"
printf '[Manager]\nShowStatus=no\n' > "$root/etc/systemd/system.conf.d/testbed.conf"

mkdir -p "$root/usr/local/lib/testbed-runner"
cat > "$root/usr/local/lib/testbed-runner/start" <<'START'
#!/bin/sh
# Mounts the repository the host named on the kernel command line (bleadvd_testbed.repo=PATH,
# 9p tag bleadvd-repo) and runs its testbed/systemd-guest.sh, which powers the machine off.
repo=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^bleadvd_testbed.repo=//p')
if [ -z "$repo" ]; then echo "testbed: no bleadvd_testbed.repo= on the kernel command line"; systemctl poweroff; exit 1; fi
mkdir -p "$repo"
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 bleadvd-repo "$repo"; then
  echo "testbed: cannot mount the repository at $repo"; systemctl poweroff; exit 1
fi
exec "$repo/testbed/systemd-guest.sh"
START
chmod 755 "$root/usr/local/lib/testbed-runner/start"
cat > "$root/etc/systemd/system/testbed-runner.service" <<UNIT
[Unit]
Description=bleadvd test bed: the scenarios
After=multi-user.target

[Service]
Type=exec
ExecStart=/usr/local/lib/testbed-runner/start
StandardOutput=tty
StandardError=inherit
TTYPath=/dev/$console
UNIT
cat > "$root/etc/systemd/system/testbed-runner.target" <<'UNIT'
[Unit]
Description=bleadvd test bed
Requires=multi-user.target testbed-runner.service
After=multi-user.target
AllowIsolate=yes
UNIT
ln -sf testbed-runner.target "$root/etc/systemd/system/default.target"

log "writing $image"
rm -f "$image"
mke2fs -q -t ext4 -L "bleadvd-$stack" -d "$root" "$image" 2G
echo "$recipe" > "$stamp"
log "ready ($(du -h --apparent-size "$image" | cut -f1), $(du -h "$image" | cut -f1) used, $(("$(date +%s)" - started)) s)"
