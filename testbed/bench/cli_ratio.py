#!/usr/bin/python3
"""bleadvctl against `busctl call` for the same method of the same bleadvd: on, off, status and
set, ROUNDS rounds of RUNS calls each, the two tools alternating (an on and an off by one, then
by the other, so that each on registers; status and set call by call). Each call is
timed from just before its spawn to its exit (the whole command, as a script sees it). Prints
each round's medians and ratios and the ratios over all runs; exits 1 when one of those is
past its target (#82: on, off, set ≤ 1.10×; status ≤ 1.20×).

Usage: cli_ratio.py [RUNS [ROUNDS]]  (bleadvctl and busctl on PATH; the system bus is bleadvd's)
"""
import statistics
import subprocess
import sys
import time

API = ("org.bleadvd.Advertiser", "/org/bleadvd/Advertiser", "org.bleadvd.Advertiser1")
CALLS = {
    "on": (["bleadvctl", "on", "bench"], ["busctl", "--system", "call", *API, "On", "as", "1", "bench"]),
    "off": (["bleadvctl", "off", "bench"], ["busctl", "--system", "call", *API, "Off", "as", "1", "bench"]),
    "status": (["bleadvctl", "status"], ["busctl", "--system", "call", *API, "Status"]),
    "set": (["bleadvctl", "set", "sensor", "temperature=21.5"],
            ["busctl", "--system", "call", *API, "Set", "sa{sv}", "sensor", "1", "temperature", "s", "21.5"]),
}
TARGETS = {"on": 1.10, "off": 1.10, "status": 1.20, "set": 1.10}


def timed(argv):
    start = time.perf_counter()
    result = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = 1000 * (time.perf_counter() - start)
    if result.returncode != 0:
        raise SystemExit("bench-cli: %s failed (%d): %s" % (" ".join(argv), result.returncode, result.stderr.decode().strip()))
    return elapsed


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    every = {verb: ([], []) for verb in CALLS}
    print("bench-cli: %d rounds of %d calls each; medians in ms (bleadvctl / busctl = ratio)" % (rounds, runs))
    for number in range(1, rounds + 1):
        times = {verb: ([], []) for verb in CALLS}
        for _ in range(runs):
            # Each tool's on registers and its off unregisters (an On of what is already on
            # would answer without BlueZ): on and off by one tool, then by the other.
            for tool in (0, 1):
                for verb in ("on", "off"):
                    times[verb][tool].append(timed(CALLS[verb][tool]))
            for verb in ("status", "set"):
                for tool in (0, 1):
                    times[verb][tool].append(timed(CALLS[verb][tool]))
        cells = []
        for verb, (ours, theirs) in times.items():
            every[verb][0].extend(ours)
            every[verb][1].extend(theirs)
            a, b = statistics.median(ours), statistics.median(theirs)
            cells.append("%s %.2f / %.2f = %.2f×" % (verb, a, b, a / b))
        print("  round %d: %s" % (number, "; ".join(cells)))
    failed = []
    cells = []
    for verb, (ours, theirs) in every.items():
        ratio = statistics.median(ours) / statistics.median(theirs)
        cells.append("%s %.2f× (≤ %.2f×)" % (verb, ratio, TARGETS[verb]))
        if ratio > TARGETS[verb]:
            failed.append("%s %.2f× > %.2f×" % (verb, ratio, TARGETS[verb]))
    print("  all %d runs: %s" % (runs * rounds, "; ".join(cells)))
    if failed:
        print("bench-cli: FAILED, past the target: %s" % "; ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
