#!/usr/bin/env bash
# Builds the test bed's btvirt for a Debian suite: BlueZ's emulator from that suite's own BlueZ
# release (Debian's source tarball, checked against the archive's SHA-256), with
# btdev-links.patch (why: the patch's head), into $TESTBED_CACHE/btvirt-SUITE. The guests run it
# instead of the suite's packaged btvirt (lib.sh, btvirt_program). Rebuilt when the patch or the
# suite's BlueZ version changes; otherwise it only checks.
#
#   testbed/btvirt/build.sh SUITE        (bookworm, trixie, sid)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testbed/common.sh
. "$here/../common.sh"
suite=${1:?usage: testbed/btvirt/build.sh SUITE}
mirror=http://deb.debian.org/debian
log() { printf 'testbed-setup: %s\n' "$*" >&2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The suite's BlueZ source package: its version, and its upstream tarball's name and SHA-256.
curl -fsS "$mirror/dists/$suite/main/source/Sources.xz" -o "$work/Sources.xz"
read -r version tarball sha256 < <(xz -dc "$work/Sources.xz" | awk '
  /^Package: / { in_bluez = ($2 == "bluez") }
  in_bluez && /^Version: / { version = $2 }
  in_bluez && /^Checksums-Sha256:/ { sums = 1; next }
  in_bluez && sums && /^ / { if ($3 ~ /^bluez_[0-9.]+\.orig\.tar\./) { print version, $3, $1; exit } next }
  { sums = 0 }')
[[ -n "${tarball:-}" ]] || { log "cannot find bluez's source in $suite's Sources"; exit 1; }
target="$TESTBED_CACHE/btvirt-$suite"
recipe="$version $(sha256sum "$here/btdev-links.patch" | cut -d' ' -f1)"
if [[ -x "$target" && "$(cat "$target.recipe" 2> /dev/null)" == "$recipe" ]]; then
  exit 0
fi

log "building btvirt from BlueZ $version ($suite) with testbed/btvirt/btdev-links.patch"
curl -fsS "$mirror/pool/main/b/bluez/$tarball" -o "$work/$tarball"
echo "$sha256  $work/$tarball" | sha256sum -c --quiet -
tar -xf "$work/$tarball" -C "$work"
source=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'bluez-*')
(cd "$source" && patch -p1 --quiet < "$here/btdev-links.patch")
# btvirt's sources as the release's Makefile.tools lists them, and what its two libraries give
# it (libshared-mainloop, libbluetooth-internal): no autotools run, no config.h but the version.
mapfile -t sources < <(awk '/^emulator_btvirt_SOURCES/ { on = 1 } on { for (i = 1; i <= NF; i++) if ($i ~ /\.c$/) print $i; if ($NF != "\\") exit }' "$source/Makefile.tools")
sources+=(src/shared/mainloop.c src/shared/io-mainloop.c src/shared/timeout-mainloop.c src/shared/mainloop-notify.c
          src/shared/queue.c src/shared/util.c src/shared/crypto.c src/shared/ecc.c src/shared/ad.c
          lib/bluetooth.c lib/hci.c lib/uuid.c)
mkdir -p "$source/lib/bluetooth"
cp "$source"/lib/*.h "$source/lib/bluetooth/"
printf '#define VERSION "%s"\n' "${version%%-*}" > "$source/config.h"
# shellcheck disable=SC2046  # glib's flags are words
(cd "$source" && cc -O2 -w -D_GNU_SOURCE -I. -Ilib $(pkg-config --cflags glib-2.0) -include config.h \
  -o "$work/btvirt" "${sources[@]}")
install -m 755 "$work/btvirt" "$target"
echo "$recipe" > "$target.recipe"
