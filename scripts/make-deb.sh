#!/usr/bin/env bash
# `make deb`: stages `make install PREFIX=/usr` into a folder and packs it as Debian expects
# (stripped binaries, gzipped man pages, copyright and changelog, Depends from dpkg-shlibdeps
# and libcrypto's symbols file, maintainer scripts that create the user, reload the bus policy
# and handle the unit the way debhelper's deb-systemd-helper/deb-systemd-invoke snippets do),
# then runs lintian on it.
#   scripts/make-deb.sh VERSION [REVISION]   ->   .build/bleadvd_VERSION-REVISION_ARCH.deb
# REVISION (default 1) is the package's own, as for any upstream packaged for Debian.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1-${2:-1}
arch=$(dpkg --print-architecture)
stage=.build/deb-root
out=".build/bleadvd_${version}_${arch}.deb"
# Reproducible: every date in the package is the last commit's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

rm -rf "$stage"
make --no-print-directory install DESTDIR="$PWD/$stage" PREFIX=/usr UNITDIR=/usr/lib/systemd/system > /dev/null
gzip -9n "$stage"/usr/share/man/man*/*
# make install put the config there with Debian's mode for a file in /etc (lintian:
# non-standard-file-perm); the postinst makes it root:bleadvd-config 0640 once the group exists.
# One executable, about 18 MB stripped, and bleadvctl a link to it. Foundation's Thread,
# FileHandle and the like link ICU and its 34 MB of data (bleadvd grew to 61 MB that way): keep
# them out.
size=$(stat -c %s "$stage/usr/sbin/bleadvd")
if ((size > 24 * 1024 * 1024)); then
  echo "make-deb: bleadvd is $((size / 1024 / 1024)) MB stripped (at most 24): did something link ICU? (nm | grep icudt)" >&2
  exit 1
fi
if [[ "$(readlink "$stage/usr/bin/bleadvctl")" != ../sbin/bleadvd ]]; then
  echo "make-deb: /usr/bin/bleadvctl is not the link ../sbin/bleadvd" >&2
  exit 1
fi
doc=$stage/usr/share/doc/bleadvd
install -d "$doc"
cat > "$doc/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: bleadvd
Comment: The binary links these statically, fetched by SwiftPM into .build/checkouts/ or
 taken from the Swift toolchain: the Swift runtime and Foundation, swift-log and
 swift-argument-parser (Apache-2.0), TOMLKit and the toml++ it bundles (MIT).

Files: *
Copyright: 2026 bleadvd developers
License: Apache-2.0

Files: .build/checkouts/swift-log/* .build/checkouts/swift-argument-parser/*
Copyright: 2018-2026 Apple Inc. and the SwiftLog and Swift Argument Parser project authors
License: Apache-2.0

Files: .build/checkouts/TOMLKit/*
Copyright: 2024 Jeff Lebrun
License: MIT

Files: .build/checkouts/TOMLKit/Sources/CTOML/Sources/toml.hpp
Copyright: Mark Gillard <mark.gillard@outlook.com.au>
           2008-2009 Bjoern Hoehrmann <bjoern@hoehrmann.de>
License: MIT

Files: usr/lib/swift/*
Copyright: 2014-2026 Apple Inc. and the Swift project authors
License: Apache-2.0 with Swift exception
 The Swift runtime and standard libraries are under the Apache License 2.0 (below) with
 this exception:
 .
 As an exception, if you use this Software to compile your source code and portions of
 this Software are embedded into the binary product as a result, you may redistribute
 such product without providing attribution as would otherwise be required by Sections
 4(a), 4(b) and 4(d) of the License.

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not use this
 file except in compliance with the License. You may obtain a copy of the License at
 https://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software distributed under
 the License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 KIND, either express or implied. See the License for the specific language governing
 permissions and limitations under the License.
 .
 On Debian systems, the full text of the Apache License, Version 2.0 can be found in
 /usr/share/common-licenses/Apache-2.0.

License: MIT
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to deal
 in the Software without restriction, including without limitation the rights
 to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in all
 copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 SOFTWARE.
COPYRIGHT
{
  printf 'bleadvd (%s) unstable; urgency=medium\n\n' "$version"
  printf '  * Built from commit %s.\n\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  printf ' -- bleadvd developers <dev@bleadvd.invalid>  %s\n' "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$doc/changelog.Debian.gz"

# Depends: what dpkg-shlibdeps finds the binary needs, libcrypto, and bluetoothd itself.
shlibs=$(
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  mkdir "$work/debian"; printf 'Source: bleadvd\n\nPackage: bleadvd\nArchitecture: any\n' > "$work/debian/control"
  binary=$PWD/$stage/usr/sbin/bleadvd
  cd "$work" && dpkg-shlibdeps -O -e"$binary" 2> /dev/null | sed -n 's/^shlibs:Depends=//p'
)
[[ -n "$shlibs" ]] || { echo "make-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# libcrypto is loaded at run time, by encrypted BTHome only (Sources/CCrypto), so
# dpkg-shlibdeps does not see it: its package's symbols file gives the version that has every
# function bleadvd looks up there.
libcrypto=$(
  package=$(dpkg-query -S "*/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libcrypto.so.3" | head -1 | cut -d: -f1)
  functions=$(sed -n 's/^ *LOOK_UP(\(.*\));$/\1/p' Sources/CCrypto/libcrypto.c)
  versions=$(dpkg-query --control-show "$package:$arch" symbols | awk -v names="$functions" '
    BEGIN { split(names, list, "\n"); for (i in list) wanted[list[i]] = 1 }
    { split($1, symbol, "@") } symbol[1] in wanted { print $2 }')
  [[ $(wc -l <<< "$versions") == $(wc -l <<< "$functions") ]] || exit 1
  echo "$package (>= $(sort -V <<< "$versions" | tail -1))"
) || { echo "make-deb: libcrypto.so.3's package does not list the functions CCrypto looks up (is libssl-dev installed?)" >&2; exit 1; }

mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: bleadvd
Version: $version
Architecture: $arch
Maintainer: bleadvd developers <dev@bleadvd.invalid>
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $shlibs, $libcrypto, bluez, dbus
Section: net
Priority: optional
Homepage: https://bleadvd.invalid/
Description: Bluetooth LE advertising daemon
 bleadvd keeps Bluetooth LE advertisements on air through BlueZ, from a
 config file, re-registering them after bluetoothd restarts or an adapter
 returns. It speaks iBeacon, Eddystone and BTHome v2 (plain or encrypted,
 with values changed in place at run time).
 .
 bleadvctl turns advertisements on and off, shows their state and previews
 their bytes.
CONTROL
echo "/etc/bleadvd/bleadvd.toml" > "$stage/DEBIAN/conffiles"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f ! -path './etc/*' -printf '%P\0' | sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"

# Maintainer scripts: the unit is enabled and started on first install, restarted (once) on
# upgrade, stopped on remove; on purge its state, the state directory and config go. The system
# user stays, as Debian leaves system users in place (files may still be owned by it).
# The config's layout (scripts/config-layout.sh) is a function of the postinst.
{
  printf '#!/bin/sh\nset -e\n'
  grep -v '^# shellcheck ' scripts/config-layout.sh
  cat <<'SCRIPT'
case "$1" in
  configure|abort-upgrade|abort-deconfigure|abort-remove)
    # The user and groups, then the config (BTHome keys, secured values): root writes it, the
    # daemon alone reads it (group bleadvd-config), not group bleadvd, who may control it. The
    # package ships it 0644 (Debian's mode for /etc; dpkg puts an unchanged one back so on
    # upgrade), and older packages left it root:bleadvd 0640: both are laid out again; an
    # admin's other choice is left, with a warning when group bleadvd or everyone may read it.
    bleadvd_config_layout /etc/bleadvd/bleadvd.toml bleadvd.conf
    # The bus reads the new policy file now, before the daemon asks to own its name.
    dbus-send --system --type=method_call --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig 2>/dev/null || true
    # A first install enables the unit; an upgrade keeps the admin's choice.
    if deb-systemd-helper --quiet was-enabled bleadvd.service; then
      deb-systemd-helper enable bleadvd.service > /dev/null || true
    else
      deb-systemd-helper update-state bleadvd.service > /dev/null || true
    fi
    if [ -d /run/systemd/system ]; then
      systemctl --system daemon-reload > /dev/null || true
      if [ -n "$2" ]; then action=restart; else action=start; fi
      deb-systemd-invoke $action bleadvd.service > /dev/null || true
    fi
    ;;
esac
exit 0
SCRIPT
} > "$stage/DEBIAN/postinst"
cat > "$stage/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
# On upgrade the running daemon keeps advertising until postinst restarts it once.
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  deb-systemd-invoke stop bleadvd.service > /dev/null || true
fi
exit 0
SCRIPT
cat > "$stage/DEBIAN/postrm" <<'SCRIPT'
#!/bin/sh
set -e
case "$1" in
  remove|purge)
    if [ -d /run/systemd/system ]; then systemctl --system daemon-reload > /dev/null || true; fi
    # The policy file is gone: the bus forgets it.
    dbus-send --system --type=method_call --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig 2>/dev/null || true
    ;;
esac
if [ "$1" = purge ]; then
  if command -v deb-systemd-helper > /dev/null; then
    deb-systemd-helper purge bleadvd.service > /dev/null || true
  fi
  # Encrypted BTHome's counters go with the config that held the keys.
  rm -rf /var/lib/bleadvd
fi
exit 0
SCRIPT
chmod 755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"
find "$stage" -exec touch --no-dereference -d "@$SOURCE_DATE_EPOCH" {} +

dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" > /dev/null
echo "$out: $(du -h "$out" | cut -f1) (installed: $(du -sh --exclude=DEBIAN "$stage" | cut -f1))"
echo "Depends: $(dpkg-deb --field "$out" Depends)"
if command -v lintian > /dev/null; then
  # (lintian warns on stderr that it runs as root; that says nothing about the package.)
  lintian --fail-on error,warning --suppress-tags-from-file scripts/lintian-expected "$out" 2> >(grep -v 'running with root privileges' >&2)
  echo "lintian: no errors or warnings (explained exceptions: scripts/lintian-expected)"
fi
