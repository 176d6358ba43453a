#!/usr/bin/env bash
# `make bench`: bleadvd side by side with busctl, bluetoothctl and BlueZ's example-advertisement
# (testbed/bench/bench.py), in the test bed with the real bluetoothd. Prints one table; record it
# in docs/BENCHMARKS.md with the commit it was measured at.
set -euo pipefail
. "$TESTBED_ROOT/testbed/lib.sh"

# bleadvd and bleadvctl as `make install` puts them: stripped, on a local file system. (Run
# from the repository, every page of the unstripped binaries is read through the VM's shared
# folder: that alone made a bleadvctl call take a second.)
bin="$TESTBED_WORK/bin"
install -Dm755 -s "$TESTBED_ROOT/.build/release/bleadvd" "$bin/bleadvd"
install -Dm755 -s "$TESTBED_ROOT/.build/release/bleadvctl" "$bin/bleadvctl"
export PATH="$bin:$PATH"
echo "bench: bleadvd and bleadvctl installed stripped in $bin ($(stat -f -c %T "$bin"); $(du -k "$bin/bleadvd" | cut -f1) and $(du -k "$bin/bleadvctl" | cut -f1) KiB)"

install_policy
python3 -u "$TESTBED_ROOT/testbed/bench/bench.py"
