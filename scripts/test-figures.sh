#!/usr/bin/env bash
# `make figures`: writes make test's figures into docs/TESTING.md, between its "make-test-figures"
# markers: each step's time and what it counted, from the record scripts/test-all.sh keeps of a
# run (make test itself changes no tracked file), with the machine it ran on and whether it
# started from a fresh clone (.build/test-figures.machine, written by the same run).
#   scripts/test-figures.sh [.build/test-figures.tsv]
# The figures are never typed by hand. Exit 1 when the record is not there, is of a run that did
# not finish or in which something failed, or the document has no markers.
set -euo pipefail
cd "$(dirname "$0")/.."
record=${1:-.build/test-figures.tsv}
[[ -s "$record" ]] || { echo "test-figures: no record at $record; run make test" >&2; exit 1; }
python3 - "$record" docs/TESTING.md "$(nproc)" "$(date -u +%Y-%m-%d)" <<'PY'
import os, sys
record, readme, cores, day = sys.argv[1:5]
# The machine and the start, as the run recorded them (key=value lines).
machine_file = os.path.splitext(record)[0] + ".machine"
machine = dict(line.rstrip("\n").split("=", 1) for line in open(machine_file) if "=" in line) if os.path.exists(machine_file) else {}
rows = [line.rstrip("\n").split("\t") for line in open(record)][1:]
if not any(r[0] == "(wall clock)" for r in rows):
    sys.exit("test-figures: %s is of a make test that did not finish; run make test" % record)
if any(int(r[3]) for r in rows):
    sys.exit("test-figures: %s is of a make test in which %d failed; docs/TESTING.md keeps the figures of a run that passed"
             % (record, sum(int(r[3]) for r in rows)))
# The test bed's lanes run at once: the run's time is its wall clock, when recorded.
wall = [r for r in rows if r[0] == "(wall clock)"]
rows = [r for r in rows if r[0] != "(wall clock)"]
total_seconds = int(wall[0][1]) if wall else sum(int(r[1]) for r in rows)
total_passed = sum(int(r[2]) for r in rows)
minutes = lambda s: "%.1f min" % (int(s) / 60)
lines = [
    "<!-- make-test-figures: written by make figures from the record of a make test where everything passed (scripts/test-figures.sh); not edited by hand -->",
    "The last full run (%s) took %s: %d tests and scenarios passed. It ran on %s, from %s%s." % (
        machine.get("date", day), minutes(total_seconds), total_passed,
        machine.get("machine", "%s cores" % cores), machine.get("start", "a build directory of unknown state"),
        " (of %s)" % machine["commit"] if "commit" in machine else ""),
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
    sys.exit("test-figures: docs/TESTING.md has no make-test-figures markers")
end += len("<!-- /make-test-figures -->")
open(readme, "w").write(text[:start] + "\n".join(lines) + text[end:])
print("test-figures: docs/TESTING.md's make test figures written from %s" % record)
PY
