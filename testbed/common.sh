# Shared settings of the test bed scripts (sourced, not run).
TESTBED_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TESTBED_CACHE=${BLEADVD_TESTBED_CACHE:-$TESTBED_ROOT/.testbed-cache}
TESTBED_VNG=$TESTBED_CACHE/venv/bin/vng
VIRTME_NG_VERSION=1.42
BTHOME_BLE_VERSION=3.25.0
BEACONTOOLS_VERSION=2.1.0
