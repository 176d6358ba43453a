#!/usr/bin/env bash
# testbed-timeout: 1500
# `make bench`: bleadvd side by side with busctl, bluetoothctl and BlueZ's example-advertisement
# (testbed/bench/bench.py), in the test bed with the real bluetoothd. Prints one table; record it
# in docs/BENCHMARKS.md with the commit it was measured at.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

# bleadvd as `make install` puts it: stripped, on a local file system, and bleadvctl a link to
# it. (Run from the repository, every page of the unstripped binary is read through the VM's
# shared folder: that alone made a bleadvctl call take a second.)
bin="$TESTBED_WORK/bin"
install -Dm755 -s "$TESTBED_ROOT/.build/release/bleadvd" "$bin/bleadvd"
ln -sfn bleadvd "$bin/bleadvctl"
export PATH="$bin:$PATH"
echo "bench: bleadvd installed stripped in $bin ($(stat -f -c %T "$bin"); $(du -k "$bin/bleadvd" | cut -f1) KiB), bleadvctl a link to it"

install_policy
python3 -u "$TESTBED_ROOT/testbed/bench/bench.py"
