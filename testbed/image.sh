#!/usr/bin/env bash
# Builds the disk image of the systemd test bed: a minimal Debian 12 whose PID 1 is systemd,
# with the distribution's own dbus.service and bluetooth.service, as on a user's gateway.
#
#   testbed/image.sh        -> $TESTBED_CACHE/systemd.img (raw ext4), rebuilt when this file changes
#
# The image holds no bleadvd: scenarios install it the way a user does (dpkg -i, make install).
# It holds one unit of ours, testbed-runner.service, which mounts the repository (shared by the
# host over 9p at the path the host has it, read-only) and runs testbed/systemd-guest.sh there.
# Boots take the image as a snapshot (qemu -snapshot): what a run writes is thrown away.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testbed/common.sh
. "$here/common.sh"

image=$TESTBED_CACHE/systemd.img
stamp=$TESTBED_CACHE/systemd.img.recipe
recipe=$(sha256sum "$here/image.sh" | cut -d' ' -f1)
if [[ -s "$image" && "$(cat "$stamp" 2>/dev/null)" == "$recipe" ]]; then
  exit 0
fi

log() { printf 'testbed-image: %s\n' "$*" >&2; }
started=$(date +%s)
root=$(mktemp -d "$TESTBED_CACHE/field-root.XXXXXX")
trap 'rm -rf "$root"' EXIT

# What a Bluetooth gateway has, plus what the scenarios use: btvirt (bluez-test-tools) for the
# two virtual controllers, python3-dbus/gi for the observer on hci1, make and binutils (strip)
# for `make install`.
packages=systemd-sysv,dbus,bluez,bluez-test-tools,kmod,udev,procps,make,binutils,python3,python3-dbus,python3-gi
log "bootstrapping Debian bookworm ($packages)"
mmdebstrap --quiet --variant=minbase --include="$packages" bookworm "$root" http://deb.debian.org/debian

echo bleadvd-testbed > "$root/etc/hostname"
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
cat > "$root/etc/systemd/system/testbed-runner.service" <<'UNIT'
[Unit]
Description=bleadvd test bed: the scenarios
After=multi-user.target

[Service]
Type=exec
ExecStart=/usr/local/lib/testbed-runner/start
StandardOutput=tty
StandardError=inherit
TTYPath=/dev/ttyS0
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
mke2fs -q -t ext4 -L bleadvd-systemd -d "$root" "$image" 2G
echo "$recipe" > "$stamp"
log "ready ($(du -h --apparent-size "$image" | cut -f1), $(du -h "$image" | cut -f1) used, $(("$(date +%s)" - started)) s)"
