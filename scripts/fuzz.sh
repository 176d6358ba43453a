#!/usr/bin/env bash
# `make fuzz`: libFuzzer (with AddressSanitizer) on the config parser, RUNS executions
# (default 1,000,000), then every crash it kept sorted by where it happened.
#
#   scripts/fuzz.sh [RUNS]
#
# TOMLKit's parser (toml++) aborts on some malformed files (assertions in its key parser);
# bleadvd reads a file in a child process first, so such a file is a config error, not a dead
# daemon. This campaign goes on past those crashes (-fork, -ignore_crashes) and fails only on
# a crash anywhere else: in our code, or in toml++ without an assertion (a memory error).
# Built apart, in Fuzz/, so the main package's build never sees -sanitize=fuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
work=.build/fuzz
rm -rf "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts"
# Seed with every config the project has: the example and the hostile corpus.
cp systemd/bleadvd.toml Tests/AdvertiserConfigTests/Corpus/*.toml "$work/corpus/" 2>/dev/null || true
swift build -c release --package-path Fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
  --product fuzz-config 2>&1 | grep -E "error|warning: unre|Compiling|Build" | tail -3
fuzzer=Fuzz/.build/release/fuzz-config
# TOMLKit never frees a parsed table (docs/RELIABILITY.md, Memory): a known leak, not a finding.
export ASAN_OPTIONS=detect_leaks=0
start=$(date +%s)
SWIFT_BACKTRACE=enable=no "$fuzzer" -fork=2 -ignore_crashes=1 -detect_leaks=0 -rss_limit_mb=4096 \
  -runs="$runs" -artifact_prefix="$work/artifacts/" "$work/corpus" > "$work/log.txt" 2>&1 || true
seconds=$(($(date +%s) - start))
executions=$(grep -oE '^#[0-9]+' "$work/log.txt" | tail -1 | tr -d '#')
echo "fuzz: ${executions:-0} executions in ${seconds} s; corpus $(ls "$work/corpus" | wc -l) inputs; $(ls "$work/artifacts" | wc -l) crash inputs kept"
# Where each crash happened: the toml++ assertion's line, or the first frame of anything else.
: > "$work/sites.txt"
for artifact in "$work"/artifacts/*; do
  [[ -e "$artifact" ]] || continue
  report=$(SWIFT_BACKTRACE=enable=no "$fuzzer" -detect_leaks=0 "$artifact" 2>&1 || true)
  if site=$(grep -m1 -oE "Assertion .* failed" <<< "$report"); then
    line=$(grep -m1 -oE "toml\.hpp:[0-9]+" <<< "$report" || echo "toml.hpp")
    echo "toml++ assertion ($line): $site" >> "$work/sites.txt"
  else
    echo "OTHER: $(grep -m1 -E "ERROR:|SUMMARY:" <<< "$report") [$artifact]" >> "$work/sites.txt"
  fi
done
sort "$work/sites.txt" | uniq -c | sort -rn | sed 's/^/  /'
if grep -q "^OTHER" "$work/sites.txt"; then
  echo "fuzz: FAILED: a crash that is not a toml++ assertion (inputs in $work/artifacts)"
  exit 1
fi
echo "fuzz: every crash is a toml++ assertion, which bleadvd contains (docs/RELIABILITY.md)"
