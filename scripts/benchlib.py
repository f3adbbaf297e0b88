"""Whole-process benchmarks: medians of wall time and peak RSS of real
`coffer` runs, with ratios against a baseline measured in the same run
(this machine is shared and noisy, so only same-run ratios are comparable)."""
import os, statistics, subprocess, sys, time

def spawn_timed(argv, env):
    """Runs argv with stdin, stdout and stderr on /dev/null; returns (wall
    seconds, CPU seconds: the child's user + system time from wait4, exit
    status)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)])
        _, status, usage = os.wait4(pid, 0)
        return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)
    finally:
        os.close(devnull)

def interleaved(commands, rounds, warmup, before=lambda label: None, check=True):
    """Runs (label, argv, env) commands in turn, one of each per round, so
    that every command sees the same minutes of a noisy machine; `before`
    runs ahead of each (not timed). The first `warmup` rounds are not
    counted. Returns {label: (median wall ms, median CPU ms)}; with `check`,
    a non-zero exit ends the benchmark."""
    wall = {label: [] for label, _, _ in commands}
    cpu = {label: [] for label, _, _ in commands}
    for r in range(rounds + warmup):
        for label, argv, env in commands:
            before(label)
            t, c, code = spawn_timed(argv, env)
            if check and code != 0:
                sys.exit(f"bench: {label}: exit {code}")
            if r >= warmup:
                wall[label].append(t * 1000); cpu[label].append(c * 1000)
    return {l: (statistics.median(wall[l]), statistics.median(cpu[l])) for l in wall}

def run_once(argv, env, stdin_bytes=None, pass_fds=()):
    """Runs argv, returns (seconds, peak RSS KiB, exit status, stdout)."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE if stdin_bytes is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=pass_fds)
    out, err = p.communicate(stdin_bytes)
    elapsed = time.perf_counter() - start
    return elapsed, p.returncode, out, err

def measure(label, argv, env, runs=15, stdin_bytes=None, warmup=2, pass_fds=()):
    """Median wall-clock time and max peak RSS over `runs` runs."""
    for _ in range(warmup):
        run_once(argv, env, stdin_bytes, pass_fds)
    times, rss = [], []
    for _ in range(runs):
        t, code, out, err = run_once(argv, env, stdin_bytes, pass_fds)
        if code != 0:
            sys.exit(f"bench: {label}: exit {code}: {err.decode(errors='replace').strip()}")
        times.append(t)
    peak = peak_rss(argv, env, stdin_bytes, pass_fds)
    med = statistics.median(times)
    return {"label": label, "median_ms": med * 1000, "min_ms": min(times) * 1000, "peak_rss_mb": peak / 1024, "runs": runs}

def peak_rss(argv, env, stdin_bytes=None, pass_fds=()):
    """Peak RSS (KiB) of one run: the child's own ru_maxrss from wait4."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(r if stdin_bytes is not None else devnull, 0)
        os.dup2(devnull, 1); os.dup2(devnull, 2)
        os.execve(argv[0], argv, env)
    os.close(r)
    if stdin_bytes:
        os.write(w, stdin_bytes)
    os.close(w)
    _, status, usage = os.wait4(pid, 0)
    return usage.ru_maxrss

def report(rows, baseline_label):
    base = next(r for r in rows if r["label"] == baseline_label)["median_ms"]
    print(f"{'benchmark':58} {'median':>10} {'min':>10} {'ratio':>8} {'peak RSS':>10}")
    for r in rows:
        print(f"{r['label']:58} {r['median_ms']:8.1f}ms {r['min_ms']:8.1f}ms {r['median_ms']/base:7.1f}x {r['peak_rss_mb']:8.1f}MB")
