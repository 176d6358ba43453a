#!/usr/bin/env bash
# `make deb`: stages `make install PREFIX=/usr` into a folder and packs it with dpkg-deb.
#   scripts/make-deb.sh VERSION   ->   .build/bleadvd_VERSION_ARCH.deb
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1
arch=$(dpkg --print-architecture)
stage=.build/deb-root
rm -rf "$stage"
make --no-print-directory install DESTDIR="$PWD/$stage" PREFIX=/usr UNITDIR=/usr/lib/systemd/system > /dev/null
mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: bleadvd
Version: $version
Architecture: $arch
Maintainer: bleadvd developers <dev@bleadvd.invalid>
Depends: libdbus-1-3, libssl3, bluez
Section: net
Priority: optional
Description: Bluetooth LE advertising daemon
 bleadvd keeps Bluetooth LE advertisements on air through BlueZ, from a config file,
 re-registering them after bluetoothd restarts or an adapter returns. bleadvctl turns them
 on and off, shows their state and previews their bytes.
CONTROL
echo "/etc/bleadvd/bleadvd.toml" > "$stage/DEBIAN/conffiles"
cat > "$stage/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
systemd-sysusers /usr/lib/sysusers.d/bleadvd.conf || true
busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ReloadConfig 2>/dev/null || true
systemctl daemon-reload 2>/dev/null || true
POSTINST
chmod 755 "$stage/DEBIAN/postinst"
out=".build/bleadvd_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$stage" "$out" > /dev/null
echo "$out: $(du -h "$out" | cut -f1)"
dpkg-deb --contents "$out" | awk '{print "  " $6}'
