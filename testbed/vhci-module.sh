#!/usr/bin/env bash
# Debian's arm64 kernel is built without the virtual HCI driver that btvirt needs (hci_vhci:
# CONFIG_BT_HCIVHCI is set for amd64, not for arm64). This builds it for an Arm stack's kernel
# from Debian's own source of that kernel (linux-source-6.12), against the kernel's headers
# package, in an arm64 chroot under qemu-user, and adds it to the kernel's modules (updates/),
# which testbed/setup.sh installs where the guest's modprobe finds them.
#
#   testbed/vhci-module.sh STACK   e.g. trixie-arm64; does nothing when the kernel has hci_vhci
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testbed/common.sh
. "$here/common.sh"
log() { printf 'testbed-vhci: %s\n' "$*" >&2; }

stack=$1
suite=${stack%-arm64}
kernel=$TESTBED_CACHE/kernel-$stack
kver=$(cat "$kernel/version")
modules=$kernel/lib/modules/$kver
[[ -z "$(find "$modules" -name 'hci_vhci.ko*' -print -quit)" ]] || exit 0

started=$(date +%s)
root=$TESTBED_CACHE/kbuild-$stack
if [[ ! -d "$root/usr/src/linux-headers-$kver" ]]; then
  log "bootstrapping Debian $suite for arm64 with linux-headers-$kver and linux-source-6.12"
  rm -rf "$root"
  mmdebstrap --quiet --variant=apt --architectures=arm64 \
    --include="make,linux-headers-$kver,linux-source-6.12" "$suite" "$root" http://deb.debian.org/debian
fi
build=$root/build/hci_vhci
rm -rf "$build" && mkdir -p "$build"
# The one file, taken out of the source tarball here (xz under emulation is slow).
tar -xJf "$root"/usr/src/linux-source-6.12.tar.xz --wildcards --strip-components=3 -C "$build" \
  '*/drivers/bluetooth/hci_vhci.c'
echo 'obj-m := hci_vhci.o' > "$build/Kbuild"
chroot "$root" make -s -C "/usr/src/linux-headers-$kver" M=/build/hci_vhci modules
install -Dm644 "$build/hci_vhci.ko" "$modules/updates/hci_vhci.ko"
depmod -b "$kernel" "$kver"
log "hci_vhci.ko for $kver built ($(modinfo -F vermagic "$modules/updates/hci_vhci.ko"); $(($(date +%s) - started)) s)"
