#!/usr/bin/env python3
"""Whole-process times of commands run in turn, one of each per round
(docs/benchmarks.md): on a machine whose load changes from minute to minute,
hyperfine's contiguous runs of one command and then the next see different
loads; here every command sees the same ones. Reports each command's median
wall time and median CPU time (the child's user + system time from wait4),
and both as a ratio to the first command's.

    interleaved-runs.py ROUNDS LABEL=COMMAND [LABEL=COMMAND ...]

COMMAND is split on spaces (no shell); its output goes to /dev/null. The
first 3 rounds are warm-up and not counted."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    commands = [(label, command.split(), dict(os.environ)) for label, command in (arg.split("=", 1) for arg in sys.argv[2:])]
    medians = benchlib.interleaved(commands, rounds, 3, check=False)
    base_wall, base_cpu = medians[commands[0][0]]
    for label, _, _ in commands:
        w, c = medians[label]
        print(f"    {label:40s} wall {w:7.2f} ms ({w / base_wall:4.2f}x)   CPU {c:6.2f} ms ({c / base_cpu:4.2f}x)")


if __name__ == "__main__":
    main()
