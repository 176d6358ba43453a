# Shared settings and helpers of the test bed scripts and of scripts/ (sourced, not run).
TESTBED_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TESTBED_CACHE=${BLEADVD_TESTBED_CACHE:-$TESTBED_ROOT/.testbed-cache}
TESTBED_VNG=$TESTBED_CACHE/venv/bin/vng
VIRTME_NG_VERSION=1.42
BTHOME_BLE_VERSION=3.25.0
BEACONTOOLS_VERSION=2.1.0
# The GATT central of testbed/gatt_central.py (scenario 58).
BLEAK_VERSION=3.1.0
BUMBLE_VERSION=0.0.236
# Home Assistant's Improv client, as its improv_ble integration runs it (scenario 66).
IMPROV_BLE_CLIENT_VERSION=2.0.1
# The BlueZ release whose btmon every x86_64 guest captures and decodes with (testbed/bluez).
BTMON_SUITE=trixie

# install_packages TAG PACKAGE...: installs those of the Debian packages that are missing.
install_packages() {
  local tag=$1 p missing=()
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "$tag: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# enable_arm64_programs: arm64 programs run here under qemu-user, through binfmt_misc
# (qemu-user-static and binfmt-support installed).
enable_arm64_programs() {
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  [[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] || update-binfmts --enable qemu-aarch64
}
