#!/usr/bin/env bash
# `make test-matrix`: every scenario on every stack the test bed boots, as a table.
#
# Stacks: Debian bookworm (BlueZ 5.66, kernel 6.1), trixie (5.82, 6.12) and sid (whatever the
# archive holds the day its image is built), each under systemd with the distribution's
# bluetooth.service (no -E), on btvirt's extended-advertising controllers and on btvirt -L's
# (no extended advertising); and bookworm with bluetoothd -E by hand on the host's root, both
# kinds of controllers. sid moves every day: its results inform, they never gate a commit (it is
# not in `make test`).
#
# Prints one line per stack and scenario (PASS/FAIL), then the table; writes both, with every
# run's full output, under $TESTBED_CACHE/matrix/. Exit code: 0 when every cell passed.
#
#   scripts/test-matrix.sh                 every run (about two hours on 2 cores)
#   scripts/test-matrix.sh RUN...          only these runs (e.g. systemd-sid-legacy); the table
#                                          keeps the other runs' last results
# Runs: host-bookworm-{extended,legacy}, systemd-{bookworm,trixie,sid}-{extended,legacy}, systemd-trixie-bumble.
set -uo pipefail
cd "$(dirname "$0")/.."
. testbed/common.sh

out=$TESTBED_CACHE/matrix
only=("$@")
((${#only[@]})) || rm -rf "$out"
mkdir -p "$out"
# 77 makes its faults with Bumble's controllers: their own column, below.
scenarios=($(ls testbed/scenarios/*.sh | grep -v '/77-'))
status=0
run() {
  local name=$1; shift
  ((${#only[@]} == 0)) || [[ " ${only[*]} " == *" $name "* ]] || return 0
  echo "==> $name: testbed/run.sh $*"
  local started=$SECONDS
  testbed/run.sh "$@" > "$out/$name.log" 2>&1 || status=1
  grep -aE '^(PASS|FAIL) |^testbed: stack ' "$out/$name.log" | sed 's/^/    /'
  echo "    ($((SECONDS - started)) s)"
}
# Three controllers: 68 and 69 have two centrals beside bleadvd.
run host-bookworm-extended --controllers 3 "${scenarios[@]}"
run host-bookworm-legacy --legacy --controllers 3 "${scenarios[@]}"
for suite in bookworm trixie sid; do
  for controllers in extended legacy; do
    run "systemd-$suite-$controllers" --systemd --stack "$suite" --controllers 3 $([[ $controllers == legacy ]] && echo --legacy) \
      "${scenarios[@]}" testbed/systemd-scenarios/*.sh
  done
done
# The second controller implementation, Bumble's (#80), with the faults of real radios (77).
run systemd-trixie-bumble --systemd --stack trixie --bumble --controllers 3 "${scenarios[@]}" testbed/scenarios/77-*.sh \
  testbed/systemd-scenarios/*.sh

# The table: a row per scenario, a column per run.
python3 - "$out" <<'PY' | tee "$out/table.md"
import os, re, sys
out = sys.argv[1]
runs = sorted((f[:-4] for f in os.listdir(out) if f.endswith(".log")),
              key=lambda n: (not n.startswith("host"), ["bookworm", "trixie", "sid"].index(n.split("-")[1]), n))
cells, banners = {}, {}
for run in runs:
    for line in open(os.path.join(out, run + ".log"), errors="replace"):
        m = re.match(r"(PASS|FAIL) (\S+) .*?(?:\(([\d.]+) s\))?$", line.strip())
        if m:
            cells[(m.group(2), run)] = m.group(1)
        m = re.match(r"testbed: stack (\w+): kernel (\S+), BlueZ (\S+) \(([^)]*)\)", line.strip())
        if m:
            banners[run] = "%s: BlueZ %s, kernel %s, %s" % (m.group(1), m.group(3), m.group(2), m.group(4))
names = sorted({name for name, _ in cells})
print("| scenario | " + " | ".join(runs) + " |")
print("|---|" + "---|" * len(runs))
for name in names:
    print("| %s | " % name + " | ".join(cells.get((name, run), "–") for run in runs) + " |")
print()
for run in runs:
    print("- %s: %s" % (run, banners.get(run, "did not boot")))
PY
exit $status
