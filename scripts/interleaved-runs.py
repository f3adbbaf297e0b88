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
import statistics
import sys
import time


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    commands = [arg.split("=", 1) for arg in sys.argv[2:]]
    devnull = os.open(os.devnull, os.O_WRONLY)
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    wall = {label: [] for label, _ in commands}
    cpu = {label: [] for label, _ in commands}
    for r in range(rounds + 3):
        for label, command in commands:
            argv = command.split()
            start = time.perf_counter()
            pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
            _, _, usage = os.wait4(pid, 0)
            elapsed = time.perf_counter() - start
            if r >= 3:
                wall[label].append(elapsed * 1000)
                cpu[label].append((usage.ru_utime + usage.ru_stime) * 1000)
    first = commands[0][0]
    base_wall, base_cpu = statistics.median(wall[first]), statistics.median(cpu[first])
    for label, _ in commands:
        w, c = statistics.median(wall[label]), statistics.median(cpu[label])
        print(f"    {label:40s} wall {w:7.2f} ms ({w / base_wall:4.2f}x)   CPU {c:6.2f} ms ({c / base_cpu:4.2f}x)")


if __name__ == "__main__":
    main()
