#!/usr/bin/python3
"""Judges bleadvd's status against what a controller really sent, over a window of time.

  airtime.py CONTROLLERS_LOG STATES HCI WANTED FROM ENDED [--back-within S] [--lie-within S]

CONTROLLERS_LOG: testbed/controllers.py's log, whose "hciN: on air 1,2 at EPOCH" lines say what
each of Bumble's controllers sent from that moment (the handles of its enabled sets, "legacy",
or "nothing"). STATES: samples of `bleadvctl status --json`, one a line: "START END JSON" (the
call's start and end, epoch seconds; the JSON on one line). HCI: the controller bleadvd
advertises on. WANTED: how many advertisements bleadvd was asked to keep on air. FROM: the
window's start (a fault set); ENDED: when the fault ended.

Prints, one line each:
  samples  how many, and the longest gap between two (a call that failed gives none): a window
         not watched proves nothing;
  lie    the longest run of samples in which status said more advertisements were on than the
         controller sent during the whole call (seconds, from the first such sample to the end of
         the last);
  stray  the longest time the controller sent more sets than WANTED;
  back   seconds from ENDED until the controller sends WANTED sets and status says all of them
         on, and both hold to the window's end (its last sample);
Exit 1 when the longest gap exceeds --gap-within (default 5 s), lie exceeds --lie-within
(default 0: never), stray is above 0, or back is past --back-within (default 5 s) or never came.
"""
import argparse
import json
import re
import sys

LINE = re.compile(r"(hci\d+): on air (\S+) at (\d+\.\d+)")


def air_timeline(path, hci):
    """[(time, count)] of what hci sent, in order."""
    timeline = [(0.0, 0)]
    with open(path, errors="replace") as f:
        for line in f:
            match = LINE.search(line)
            if match and match.group(1) == hci:
                words = match.group(2)
                timeline.append((float(match.group(3)), 0 if words == "nothing" else len(words.split(","))))
    return timeline


def air_at(timeline, moment):
    count = 0
    for when, value in timeline:
        if when > moment:
            break
        count = value
    return count


def air_counts(timeline, start, end):
    """How many sets were sent at each moment in [start, end]: what was sent at its start, and each change after."""
    return [air_at(timeline, start)] + [value for when, value in timeline if start < when <= end]


def samples(path):
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.split(" ", 2)
            if len(parts) < 3:
                continue
            try:
                states = json.loads(parts[2])
            except ValueError:
                continue  # a call that failed (bleadvd restarting): no claim
            on = sum(1 for entry in states.values()
                     if isinstance(entry, dict) and entry.get("kind") == "advertisement" and entry.get("state") == "on")
            yield float(parts[0]), float(parts[1]), on


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("states")
    parser.add_argument("hci")
    parser.add_argument("wanted", type=int)
    parser.add_argument("start", type=float)
    parser.add_argument("ended", type=float)
    parser.add_argument("--back-within", type=float, default=5.0)
    parser.add_argument("--lie-within", type=float, default=0.0)
    parser.add_argument("--gap-within", type=float, default=5.0)
    args = parser.parse_args()
    timeline = air_timeline(args.log, args.hci)
    window = [s for s in samples(args.states) if s[0] >= args.start]
    if not window:
        sys.exit("airtime: no status sample after the fault began")

    # A window whose samples are far apart (a failed call gives no sample) was not watched: a lie
    # in a gap would go unseen.
    starts = [args.start] + [begun for begun, _, _ in window]
    gap = max(b - a for a, b in zip(starts, starts[1:]))

    lie, lie_from, lie_to = 0.0, None, None
    for begun, done, on in window:
        if on > max(air_counts(timeline, begun, done)):
            lie_from = begun if lie_from is None else lie_from
            lie_to = done
            lie = max(lie, lie_to - lie_from)
        else:
            lie_from = None

    stray, stray_from = 0.0, None
    points = [(args.start, air_at(timeline, args.start))] + [p for p in timeline if p[0] > args.start]
    end = window[-1][1]
    for when, value in points:
        if value > args.wanted and stray_from is None:
            stray_from = when
        elif value <= args.wanted and stray_from is not None:
            stray, stray_from = max(stray, when - stray_from), None
    if stray_from is not None:
        stray = max(stray, end - stray_from)

    back = None
    for begun, done, on in window:
        if done < args.ended:
            continue
        good = on == args.wanted and min(air_counts(timeline, begun, done)) == args.wanted
        if good and back is None:
            back = max(0.0, begun - args.ended)
        elif not good:
            back = None
    print(f"samples {len(window)}, the longest gap between two {gap:.1f} s (allowed {args.gap_within:.1f} s)")
    print(f"lie {lie:.1f} s (status said on while the controller sent less; allowed {args.lie_within:.1f} s)")
    print(f"stray {stray:.1f} s (the controller sent more than the {args.wanted} wanted)")
    print("back " + (f"{back:.1f} s after the fault ended (within {args.back_within:.0f} s)" if back is not None
                     else "never: at the window's end the controller or status still fell short"))
    failed = gap > args.gap_within or lie > args.lie_within or stray > 0 or back is None or back > args.back_within
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
