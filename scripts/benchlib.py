"""Whole-process benchmarks: medians of wall time and peak RSS of real
`coffer` runs, with ratios against a baseline measured in the same run
(this machine is shared and noisy, so only same-run ratios are comparable)."""
import os, statistics, subprocess, sys, time

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
