#!/bin/sh
# Which tests start a dbus-daemon of their own (#65): runs the unit, bus and daemon tests with
# BLEADVD_BUS_TALLY set (TestSupport's PrivateBus appends the running test's id to it) and prints,
# per test target, how many of its tests start one, against how many it has.
# Usage: scripts/bus-tally.sh (after swift build --build-tests); BUS_TALLY_KEEP=FILE keeps the
# ids of the tests that started one.
set -eu
tally=$(mktemp)
log=$(mktemp)
trap 'rm -f "$log"; [ -n "${BUS_TALLY_KEEP:-}" ] && cp "$tally" "$BUS_TALLY_KEEP"; rm -f "$tally"' EXIT
if ! BLEADVD_BUS_TALLY="$tally" swift test --skip-build --disable-xctest >"$log" 2>&1; then
    tail -20 "$log"
    echo "bus-tally: the tests failed; the tally would not be whole" >&2
    exit 1
fi
for target in Tests/*Tests; do
    name=${target#Tests/}
    tests=$(find "$target" -name "*.swift" -exec grep -h "@Test" {} + | wc -l)
    buses=$(sort -u "$tally" | grep -c "^$name\." || true)
    printf '%-24s %4s of %4s tests start a dbus-daemon\n' "$name" "$buses" "$tests"
done
