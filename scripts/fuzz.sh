#!/usr/bin/env bash
# `make fuzz`: libFuzzer (with AddressSanitizer) on four targets, RUNS executions each
# (default 1,000,000), then every crash it kept sorted by where it happened:
#   fuzz-config         the config parser (any bytes as a config file)
#   fuzz-advertisement  validation and the AD encoder (an advertisement drawn from the bytes)
#   fuzz-gatt-value     a central's write decoded in a format drawn from the bytes, and back
#   fuzz-message        our reading of any D-Bus message libdbus accepts off the wire, and the
#                       round trip back to bytes
#
#   scripts/fuzz.sh [--smoke] [RUNS] [TARGET...]
#
# --smoke (make test): runs from a scratch copy of each corpus and leaves Fuzz/Corpus as it is.
#
# TOMLKit's parser (toml++) aborts on some malformed files (assertions in its key parser);
# bleadvd reads a file in a child process first, so such a file is a config error, not a dead
# daemon. For fuzz-config the campaign goes on past those crashes (-fork, -ignore_crashes) and
# fails only on a crash anywhere else: in our code, or in toml++ without an assertion (a memory
# error). For the other two, any crash fails. The corpora libFuzzer grows are kept under
# Fuzz/Corpus/TARGET (seeds in the repository; `make fuzz` adds what it finds).
# Built apart, in Fuzz/, so the main package's build never sees -sanitize=fuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=0
if [[ "${1:-}" == --smoke ]]; then smoke=1; shift; fi
runs=${1:-1000000}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz-config fuzz-advertisement fuzz-gatt-value fuzz-message)
work=.build/fuzz

# SwiftPM plans the build once and reuses the plan (Fuzz/.build/release.yaml) while Fuzz's own
# manifest is unchanged: a file added to one of bleadvd's modules since then was left out, and
# code using it failed to build (make test at dae0bc3: "cannot find 'DBusProperties' in scope").
# Planning again costs about a second.
rm -f Fuzz/.build/release.yaml
for target in "${targets[@]}"; do
  swift build -c release --package-path Fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
    --product "$target" 2>&1 | grep -E "error|warning: unre|Build" | tail -3
done
# TOMLKit never frees a parsed table (docs/RELIABILITY.md, Memory): a known leak, not a finding.
export ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no

failed=0
for target in "${targets[@]}"; do
  fuzzer=Fuzz/.build/release/$target
  corpus=Fuzz/Corpus/$target
  artifacts=$work/$target/artifacts
  rm -rf "$artifacts"
  mkdir -p "$corpus" "$artifacts"
  if ((smoke)); then
    rm -rf "$work/$target/corpus" && cp -r "$corpus" "$work/$target/corpus"
    corpus=$work/$target/corpus
  fi
  # fuzz-config starts from every config the project has: the example and the hostile corpus.
  if [[ "$target" == fuzz-config ]]; then
    cp -n systemd/bleadvd.toml Tests/AdvertiserConfigTests/Corpus/*.toml "$corpus/" 2>/dev/null || true
  fi
  # fuzz-message starts from messages of the kinds bleadvd exchanges (libdbus is not
  # instrumented: from nothing, libFuzzer would not find a valid header).
  if [[ "$target" == fuzz-message ]]; then FUZZ_WRITE_SEEDS=$corpus "$fuzzer"; fi
  options=(-detect_leaks=0 -rss_limit_mb=4096 -runs="$runs" -artifact_prefix="$artifacts/")
  [[ "$target" == fuzz-config ]] && options+=(-fork=2 -ignore_crashes=1)
  start=$(date +%s)
  "$fuzzer" "${options[@]}" "$corpus" > "$work/$target/log.txt" 2>&1 || true
  seconds=$(($(date +%s) - start))
  # Keep the corpus small enough for the repository: the fewest inputs with the same coverage.
  if ((!smoke)); then
    rm -rf "$corpus.min" && mkdir "$corpus.min"
    "$fuzzer" -merge=1 -detect_leaks=0 "$corpus.min" "$corpus" > "$work/$target/merge.txt" 2>&1 \
      && rm -rf "$corpus" && mv "$corpus.min" "$corpus" || rm -rf "$corpus.min"
  fi
  executions=$(grep -oE '^#[0-9]+' "$work/$target/log.txt" | tail -1 | tr -d '#')
  echo "$target: ${executions:-0} executions in ${seconds} s; corpus $(ls "$corpus" | wc -l) inputs; $(ls "$artifacts" | wc -l) crash inputs kept"
  # Where each crash happened: the toml++ assertion's line, or the first report line of anything else.
  : > "$work/$target/sites.txt"
  for artifact in "$artifacts"/*; do
    [[ -e "$artifact" ]] || continue
    report=$("$fuzzer" -detect_leaks=0 "$artifact" 2>&1 || true)
    if [[ "$target" == fuzz-config ]] && site=$(grep -m1 -oE "Assertion .* failed" <<< "$report"); then
      line=$(grep -m1 -oE "toml\.hpp:[0-9]+" <<< "$report" || echo "toml.hpp")
      echo "toml++ assertion ($line): $site" >> "$work/$target/sites.txt"
    else
      echo "OTHER: $(grep -m1 -E "Fatal error|ERROR:|SUMMARY:" <<< "$report") [$artifact]" >> "$work/$target/sites.txt"
    fi
  done
  sort "$work/$target/sites.txt" | uniq -c | sort -rn | sed 's/^/  /'
  if grep -q "^OTHER" "$work/$target/sites.txt"; then
    echo "$target: FAILED: a crash that is not a toml++ assertion (inputs in $artifacts)"
    failed=1
  elif ((executions < runs)); then
    echo "$target: FAILED: stopped after ${executions:-0} of $runs executions (see $work/$target/log.txt)"
    failed=1
  fi
done
((failed == 0)) && echo "fuzz: clean (every fuzz-config crash is a toml++ assertion, which bleadvd contains; docs/RELIABILITY.md)"
exit "$failed"
