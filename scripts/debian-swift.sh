#!/usr/bin/env bash
# Builds bleadvd with Debian's own Swift (the `swiftlang` package of Debian unstable) in a
# chroot made by mmdebstrap from Debian's packages, for amd64 or, under qemu-user, arm64.
#
#   scripts/debian-swift.sh [ARCH] [STEP...]   ARCH: amd64 (default) or arm64
#     STEP: build (release binaries), test (unit tests), deb (the package); default: all three
#   -> .build/debian-ARCH/release/bleadvd and bleadvctl, .build/debian-ARCH/bleadvd_VERSION-REVISION_ARCH.deb
#      (laid out as `make build` and `make deb` lay out .build/), and the swiftlang version used
#
# Why unstable: trixie's swiftlang 6.0.3 cannot read swift-log 1.16.2's manifest (tools version
# 6.2.0), and trixie-backports has none; unstable's 6.2.3 can. It cannot be installed on trixie
# (it needs libc6 2.42, libpython3.14 and libxml2-16, none of which trixie has), so the chroot
# is unstable's. But a program linked against unstable's glibc 2.43 asks for it: sqrtf, atan2f
# and eleven more math functions got new versions there, and the static Swift runtime calls
# them, so the package would say libc6 (>= 2.43) and install on neither trixie nor Raspberry Pi
# OS. The binaries are therefore linked against trixie's C libraries, a sysroot unpacked in
# the chroot at /sysroot/trixie: they ask for glibc 2.38, which trixie has, and dpkg-shlibdeps
# says so. Not Debian 12's 2.36: the runtime calls strlcpy and __isoc23_strtol, new in 2.38.
#
# The chroot is cached in $TESTBED_CACHE/swiftlang-sid-ARCH and rebuilt when its packages
# change. It builds the tracked files as they are (git stash create, else HEAD): what a clean
# checkout of the next commit builds; untracked files stay out. The Swift packages come the way
# the host's git gets them (its url.*.insteadOf settings and their folders are carried over,
# read-only), else from GitHub.
set -euo pipefail
cd "$(dirname "$0")/.."
. testbed/common.sh

arch=${1:-amd64}
shift || true
steps=("$@")
((${#steps[@]})) || steps=(build test deb)
case "$arch" in amd64|arm64) ;; *) echo "debian-swift: no architecture $arch (amd64 or arm64)" >&2; exit 2 ;; esac
for step in "${steps[@]}"; do
  case "$step" in build|test|deb) ;; *) echo "debian-swift: no step $step (build, test, deb)" >&2; exit 2 ;; esac
done
log() { printf 'debian-swift[%s]: %s\n' "$arch" "$*" >&2; }

root=$TESTBED_CACHE/swiftlang-sid-$arch
# g++: the C++ standard headers for toml++ (swiftlang depends on gcc only); binutils-gold: the
# linker (below)
packages=swiftlang,g++,binutils-gold,libdbus-1-dev,pkg-config,libssl-dev,dbus,systemd,python3-dbus,python3-gi,dpkg-dev,lintian,make,git,ca-certificates,binutils,file
# The sysroot's: what the link step reads (crt files, libc, libm, libstdc++, libgcc, libdbus-1).
sysroot=/sysroot/trixie
sysroot_packages=libc6-dev,libgcc-14-dev,libstdc++-14-dev,libdbus-1-dev
recipe=$(sha256sum <<< "$packages $sysroot_packages" | cut -d' ' -f1)

# What runs here: mmdebstrap, dpkg-architecture; for a foreign architecture, its programs run
# under qemu-user through binfmt_misc (mmdebstrap checks with arch-test that they do).
if [[ "$arch" == "$(dpkg --print-architecture)" ]]; then
  install_packages debian-swift mmdebstrap dpkg-dev
else
  install_packages debian-swift mmdebstrap dpkg-dev qemu-user-static binfmt-support arch-test
  enable_arm64_programs
fi

if [[ ! -L "$root/usr/bin/swift" || "$(cat "$root.recipe" 2>/dev/null)" != "$recipe" ]]; then
  started=$SECONDS
  log "bootstrapping Debian unstable for $arch ($packages)"
  rm -rf "$root" "$root.recipe"
  # unstable's Release file is valid for a week; a mirror that is a snapshot serves one past
  # that date. Signatures are still checked.
  mmdebstrap --quiet --variant=apt --architectures="$arch" --aptopt='Acquire::Check-Valid-Until "false"' \
    --include="$packages" sid "$root" http://deb.debian.org/debian
  # Unpacked only (nothing runs in it): the files the linker reads.
  mkdir -p "$root$sysroot"
  # (The /lib of a merged /usr, where libc.so's linker script looks.)
  mmdebstrap --quiet --variant=extract --architectures="$arch" --include="$sysroot_packages" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr trixie "$root$sysroot" http://deb.debian.org/debian > /dev/null
  echo "$recipe" > "$root.recipe"
  log "chroot ready in $((SECONDS - started)) s"
fi

# The chroot's view: /proc, /dev, the sources, and the host's package folders, unmounted on exit.
mounts=()
bind() { mkdir -p "$root$2"; mount --bind "$1" "$root$2"; mounts=("$root$2" "${mounts[@]}"); [[ "${3:-}" != ro ]] || mount -o remount,bind,ro "$root$2"; }
cleanup() { local m; for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
trap cleanup EXIT
mkdir -p "$root/proc" && mount -t proc proc "$root/proc" && mounts=("$root/proc")
bind /dev /dev
gitconfig=$(git config --system --get-regexp '^url\..*\.insteadof$' || true)
: > "$root/etc/gitconfig"
while read -r key value; do
  [[ -n "$key" ]] || continue
  folder=${key#url.}; folder=${folder%.insteadof}
  if [[ "$folder" == /* && -d "$folder" ]]; then
    [[ -d "$root$folder" && -n "$(ls -A "$root$folder" 2>/dev/null)" ]] || bind "$folder" "$folder" ro
  fi
  git config --file "$root/etc/gitconfig" --add "$key" "$value"
done <<< "$gitconfig"
cp -L /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/host-ca.crt"
git config --file "$root/etc/gitconfig" http.sslCAInfo /usr/local/share/host-ca.crt

src=/src/bleadvd
# The sources afresh; the build folder kept, so that a step reuses what an earlier one built.
mkdir -p "$root$src" && find "$root$src" -mindepth 1 -maxdepth 1 ! -name .build -exec rm -rf {} +
tree=$(git stash create)
git archive "${tree:-HEAD}" | tar -x -C "$root$src"
epoch=$(git log -1 --format=%ct)
version=$(sed -n 's/^ *public static let version = "\(.*\)"$/\1/p' Sources/AdvertiserControl/ControlAPI.swift)
in_chroot() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 SOURCE_DATE_EPOCH="$epoch" \
  bash -o pipefail -c "cd $src && $1"; }
log "$(in_chroot 'swift --version 2>&1 | head -n1')"

out=.build/debian-$arch
mkdir -p "$out/release"
for step in "${steps[@]}"; do
  started=$SECONDS
  case "$step" in
    # Linked against trixie's libraries (above), by gold as swift.org's toolchain links: with
    # Debian's default, ld.bfd, the static Swift runtime's sections leave the binaries without
    # a read-only relocation segment (lintian: hardening-no-relro); with lld, swiftlang's other
    # linker, nothing of Foundation's ICU data is collected (56 MB).
    # pkg-config's answers come from the sysroot too: SwiftPM would otherwise put unstable's
    # library folder (dbus-1.pc's -L) in front of it.
    build) multiarch=$(dpkg-architecture -a"$arch" -qDEB_HOST_MULTIARCH 2>/dev/null)
           flags="-c release --static-swift-stdlib -Xswiftc -use-ld=gold -Xswiftc -Xclang-linker -Xswiftc --sysroot=$sysroot"
           in_chroot "export PKG_CONFIG_SYSROOT_DIR=$sysroot PKG_CONFIG_LIBDIR=$sysroot/usr/lib/$multiarch/pkgconfig:$sysroot/usr/share/pkgconfig
                      swift build $flags --product bleadvd && ln -sfn bleadvd .build/release/bleadvctl"
           in_chroot 'printf "bleadvd asks glibc for %s\n" "$(objdump -T .build/release/bleadvd | grep -o "GLIBC_[0-9.]*" | sort -uV | tail -n1)"' >&2
           cp "$root$src/.build/release/bleadvd" "$out/release/" && ln -sfn bleadvd "$out/release/bleadvctl" ;;
    # Debian's swiftlang 6.2.3 ships the _Testing_Foundation overlay's module but not its
    # library, which a test importing both Testing and Foundation links to: leave it out.
    test)  in_chroot 'swift test --disable-xctest -Xswiftc -Xfrontend -Xswiftc -disable-cross-import-overlays 2>&1 | grep -aE "^(✘|error)|Test run with"' ;;
    deb)   in_chroot "scripts/make-deb.sh $version"
           cp "$root$src"/.build/bleadvd_*_"$arch".deb "$out/" ;;
  esac
  log "$step: $((SECONDS - started)) s"
done
