#!/usr/bin/env bash
# `make docs`: the API documentation of every library product, built with the DocC plugin.
# Fails on any DocC warning (a broken symbol link, an undocumented parameter) and on any
# public declaration of ours without a summary. (DocC's coverage table also lists what the
# standard library gives a type, such as `!=`, `hashValue` or an actor's `assumeIsolated`;
# those are not ours to document and are left out.)
# The archives land in .build/plugins/Swift-DocC/outputs/TARGET.doccarchive.
#
#   scripts/check-docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(Events DBus Peripheral PeripheralMocks BluetoothModule PeripheralBlueZ AdvertiserConfig AdvertiserControl)
inherited='^(!=|\.\.\.|\.\.<|<=|>=|>|hash\(into:\)|hashValue|init\(rawValue:\)|rawValue|localizedDescription|init\((unicodeScalar|extendedGrapheme)|measure\(|sleep\(for:tolerance:\)|(assert|precondition)Isolated|assumeIsolated|withSerialExecutor|asUnowned(Serial|Task)Executor\(\)|isMainExecutor|isSameExclusiveExecutionContex|isIsolatingCurrentContext\(\))'
failed=0
for target in "${targets[@]}"; do
  if ! log=$(swift package --disable-sandbox generate-documentation --target "$target" --warnings-as-errors \
      --experimental-documentation-coverage --coverage-summary-level detailed 2>&1); then
    echo "docs: $target: FAILED"
    grep -E '^(error|warning): ' <<< "$log" | grep -vE "docc convert|NSCocoaErrorDomain" | sed 's/^/    /'
    failed=1
    continue
  fi
  # Coverage rows: symbol | kind | has abstract | ...
  undocumented=$(awk -F'|' 'NF > 5 && $3 ~ /false/ && $2 !~ /CollectionGroup|Extended/ {gsub(/ +$/, "", $1); print $1}' <<< "$log" \
    | grep -vE "$inherited" || true)
  if [[ -n "$undocumented" ]]; then
    echo "docs: $target: public declarations without a summary:"
    sed 's/^/    /' <<< "$undocumented"
    failed=1
  else
    echo "docs: $target: no warnings; every public declaration has a summary"
  fi
done
exit "$failed"
