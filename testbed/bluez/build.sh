#!/usr/bin/env bash
# Builds one of BlueZ's tools for the test bed from a Debian suite's BlueZ release (Debian's
# source tarball, checked against the archive's SHA-256), compiled from the release's own lists
# of sources (no autotools run; config.h holds the version and Debian's directories):
#   btvirt  the virtual controllers' emulator, with btdev-links.patch and btdev-ext-reports.patch
#           (why: each patch's head),
#           into $TESTBED_CACHE/btvirt-SUITE, which that suite's guests run instead of the
#           packaged one (lib.sh, btvirt_program);
#   btmon   the HCI monitor that writes and decodes every guest's capture, into
#           $TESTBED_CACHE/bluez-tools/btmon, ahead of the packaged one in the guests' PATH
#           (lib.sh, bed_tools): one release for every stack, so that the scenarios read one
#           format, and one that lives through the bed's boots (Debian 12's 5.66 calls a
#           missing decoder through a null pointer at some ATT writes, and its capture ends
#           there; docs/RELIABILITY.md, "Debian 12's btmon died").
# Rebuilt when the release or the patch changes; otherwise it only checks.
#
#   testbed/bluez/build.sh btvirt SUITE      (bookworm, trixie, sid)
#   testbed/bluez/build.sh btmon SUITE       (common.sh's BTMON_SUITE)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testbed/common.sh
. "$here/../common.sh"
usage="usage: testbed/bluez/build.sh btvirt|btmon SUITE"
tool=${1:?$usage}
suite=${2:?$usage}
mirror=http://deb.debian.org/debian
log() { printf 'testbed-setup: %s\n' "$*" >&2; }

case $tool in
  btvirt) target="$TESTBED_CACHE/btvirt-$suite" patches=("$here/btdev-links.patch" "$here/btdev-ext-reports.patch") ;;
  btmon) target="$TESTBED_CACHE/bluez-tools/btmon" patches=() ;;
  *) echo "$usage" >&2; exit 2 ;;
esac

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
recipe="$tool $version"
for patch in "${patches[@]}"; do recipe+=" $(sha256sum "$patch" | cut -d' ' -f1)"; done
if [[ -x "$target" && "$(cat "$target.recipe" 2> /dev/null)" == "$recipe" ]]; then
  exit 0
fi

log "building $tool from BlueZ $version ($suite)${patches:+ with ${patches[*]#"$TESTBED_ROOT/"}}"
curl -fsS "$mirror/pool/main/b/bluez/$tarball" -o "$work/$tarball"
echo "$sha256  $work/$tarball" | sha256sum -c --quiet -
tar -xf "$work/$tarball" -C "$work"
source=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'bluez-*')
for patch in "${patches[@]}"; do
  # BlueZ 5.84 and later report long extended advertising data themselves.
  if [[ $patch == */btdev-ext-reports.patch ]] && ! grep -qF 'uint8_t raw[24 + 31];' "$source/emulator/btdev.c"; then continue; fi
  (cd "$source" && patch -p1 --quiet < "$patch")
done

# sources FILE VARIABLE: the C files a variable of the release's Makefile FILE lists.
sources() {
  awk -v variable="$2" '
    $1 == variable && $2 == "=" { on = 1 }
    on { for (i = 1; i <= NF; i++) { word = $i; sub(/\\$/, "", word); if (word ~ /\.c$/) print word }
         if ($0 !~ /\\[ \t]*$/) exit }' "$source/$1"
}
library=()
case $tool in
  btvirt)
    # What its two libraries give it (libshared-mainloop, libbluetooth-internal), in part.
    mapfile -t files < <(sources Makefile.tools emulator_btvirt_SOURCES)
    files+=(src/shared/mainloop.c src/shared/io-mainloop.c src/shared/timeout-mainloop.c src/shared/mainloop-notify.c
            src/shared/queue.c src/shared/util.c src/shared/crypto.c src/shared/ecc.c src/shared/ad.c
            lib/bluetooth.c lib/hci.c lib/uuid.c) ;;
  btmon)
    # Its libraries whole (libshared-mainloop, libbluetooth-internal), as an archive: only what
    # it uses is linked.
    mapfile -t files < <(sources Makefile.tools monitor_btmon_SOURCES)
    mapfile -t library < <(sources Makefile.am shared_sources; sources Makefile.am src_libshared_mainloop_la_SOURCES
                           sources Makefile.am lib_sources; sources Makefile.am extra_sources) ;;
esac
mkdir -p "$source/lib/bluetooth"
cp "$source"/lib/*.h "$source/lib/bluetooth/"
printf '#define VERSION "%s"\n#define STORAGEDIR "/var/lib/bluetooth"\n#define CONFIGDIR "/etc/bluetooth"\n' "${version%%-*}" > "$source/config.h"
# shellcheck disable=SC2046  # glib's flags are words
compile() { cc -O2 -w -D_GNU_SOURCE -I. -Ilib $(pkg-config --cflags glib-2.0) -include config.h "$@"; }
if ((${#library[@]})); then
  mkdir -p "$work/objects"
  for file in "${library[@]}"; do (cd "$source" && compile -c "$file" -o "$work/objects/${file//\//_}.o"); done
  ar rcs "$work/library.a" "$work"/objects/*.o
fi
# shellcheck disable=SC2046
(cd "$source" && compile -o "$work/$tool" "${files[@]}" ${library:+"$work/library.a"} $(pkg-config --libs glib-2.0) -ldl)
install -D -m 755 "$work/$tool" "$target"
echo "$recipe" > "$target.recipe"
