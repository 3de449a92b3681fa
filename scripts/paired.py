#!/usr/bin/env python3
"""Paired whole-process timing: runs command A and command B in turn
(A B A B ...), each as a whole process, and prints each one's user, system,
CPU (user + system) and wall seconds and peak RSS as min, median and max,
then the A/B ratios taken pair by pair. Pairing keeps a ratio meaningful on
a machine whose speed drifts (a shared VM): compare the medians of the
ratios, not seconds from different windows.

    scripts/paired.py -n 8 --vs 'target/release/ember-old wordcount F -o /tmp/b.txt' \
        -- target/release/ember wordcount F -o /tmp/a.txt

The commands' output and error streams go to /dev/null; a command that
exits non-zero stops the run with its exit status and command. Uses only
the standard library (os.wait4 gives the child's own CPU times and peak
RSS).
"""

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run_once(argv):
    """Runs argv once; returns (user, sys, wall, peak MiB)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"paired: {shlex.join(argv)} exited with {code}")
    return usage.ru_utime, usage.ru_stime, wall, usage.ru_maxrss / 1024


def row(name, values, digits=3):
    lo, mid, hi = min(values), statistics.median(values), max(values)
    return f"{name:<12} {lo:>10.{digits}f} {mid:>10.{digits}f} {hi:>10.{digits}f}"


def main():
    parser = argparse.ArgumentParser(
        description="Times command A against command B in alternated, whole-process pairs.")
    parser.add_argument("-n", type=int, default=6, help="pairs timed (default 6)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed pairs first (default 1)")
    parser.add_argument("--vs", required=True, help="command B, one string split as a shell would")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="command A, after --")
    args = parser.parse_args()
    a = args.command[1:] if args.command[:1] == ["--"] else args.command
    b = shlex.split(args.vs)
    if not a or not b or args.n < 1:
        parser.error("give -n >= 1, --vs 'B' and -- A")
    for _ in range(args.warmup):
        run_once(a)
        run_once(b)
    runs = {"A": [], "B": []}
    for _ in range(args.n):
        runs["A"].append(run_once(a))
        runs["B"].append(run_once(b))
    print(f"{'':<12} {'min':>10} {'median':>10} {'max':>10}   ({args.n} pairs, whole processes)")
    for who in ("A", "B"):
        r = runs[who]
        print(row(f"{who} user s", [x[0] for x in r]))
        print(row(f"{who} sys s", [x[1] for x in r]))
        print(row(f"{who} cpu s", [x[0] + x[1] for x in r]))
        print(row(f"{who} wall s", [x[2] for x in r]))
        print(row(f"{who} peak MiB", [x[3] for x in r], 1))
    pairs = list(zip(runs["A"], runs["B"]))
    print(row("A/B cpu", [(x[0] + x[1]) / (y[0] + y[1]) for x, y in pairs], 4))
    print(row("A/B wall", [x[2] / y[2] for x, y in pairs], 4))


if __name__ == "__main__":
    main()
