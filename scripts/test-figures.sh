#!/usr/bin/env bash
# `make figures`: writes make test's figures into the README, between its "make-test-figures"
# markers: each step's time and what it counted, from the record scripts/test-all.sh keeps of a
# run (make test itself changes no tracked file).
#   scripts/readme-figures.sh [.build/test-figures.tsv]
# The README's figures are never typed by hand. Exit 1 when the record is not there, is of a run
# that did not finish or in which something failed, or the README has no markers.
set -euo pipefail
cd "$(dirname "$0")/.."
record=${1:-.build/test-figures.tsv}
[[ -s "$record" ]] || { echo "readme-figures: no record at $record; run make test" >&2; exit 1; }
python3 - "$record" README.md "$(nproc)" "$(date -u +%Y-%m-%d)" <<'PY'
import sys
record, readme, cores, day = sys.argv[1:5]
rows = [line.rstrip("\n").split("\t") for line in open(record)][1:]
if not any(r[0] == "(wall clock)" for r in rows):
    sys.exit("readme-figures: %s is of a make test that did not finish; run make test" % record)
if any(int(r[3]) for r in rows):
    sys.exit("readme-figures: %s is of a make test in which %d failed; the README keeps the figures of a run that passed"
             % (record, sum(int(r[3]) for r in rows)))
# The test bed's lanes run at once: the run's time is its wall clock, when recorded.
wall = [r for r in rows if r[0] == "(wall clock)"]
rows = [r for r in rows if r[0] != "(wall clock)"]
total_seconds = int(wall[0][1]) if wall else sum(int(r[1]) for r in rows)
total_passed = sum(int(r[2]) for r in rows)
minutes = lambda s: "%.1f min" % (int(s) / 60)
lines = [
    "<!-- make-test-figures: written by make figures from the record of a make test where everything passed (scripts/readme-figures.sh); not edited by hand -->",
    "The last full run (%s, %s cores) took %s: %d tests and scenarios passed." % (day, cores, minutes(total_seconds), total_passed),
    "",
] + ([
    "The test bed's four steps run in two lanes at once (the end-to-end tests, then Home Assistant's libraries, in one; the package under systemd, then the other stacks, in the other): their times overlap.",
    "",
] if wall else []) + [
    "| step | time | passed |",
    "|---|---|---|",
]
lines += ["| %s | %s | %s |" % (name, minutes(seconds), passed if int(passed) else "—") for name, seconds, passed, _ in rows]
lines.append("<!-- /make-test-figures -->")
text = open(readme).read()
start = text.find("<!-- make-test-figures")
end = text.find("<!-- /make-test-figures -->")
if start < 0 or end < 0:
    sys.exit("readme-figures: README.md has no make-test-figures markers")
end += len("<!-- /make-test-figures -->")
open(readme, "w").write(text[:start] + "\n".join(lines) + text[end:])
print("readme-figures: README.md's make test figures written from %s" % record)
PY
