#!/usr/bin/env python3
"""Foundation benchmark (issue: foundation): `coffer get` on a 1,000-item
vault with a small KDF and with the default KDF, so the KDF's share of an
unlock is visible. Baseline: `coffer --version` (process start only)."""
import os, shutil, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(__file__))
from benchlib import measure, report

coffer = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="coffer-bench-")
try:
    env = {"HOME": tmp, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    pw = os.path.join(tmp, "pw")
    with open(pw, "w") as f:
        f.write("bench passphrase\n")
    small = os.path.join(tmp, "small.coffer")
    default = os.path.join(tmp, "default.coffer")
    P = ["--passphrase-file", pw]
    subprocess.run([coffer, "init", "--vault", small, "--kdf-memory", "8M", "--kdf-iterations", "1", "--kdf-parallelism", "1"] + P, env=env, check=True, stderr=subprocess.DEVNULL)
    subprocess.run([coffer, "init", "--vault", default] + P, env=env, check=True, stderr=subprocess.DEVNULL)
    for v in (small, default):
        subprocess.run([os.path.join(os.path.dirname(coffer), "coffer-bench"), "fill", "--vault", v, "1000"] + P, env=env, check=True, stderr=subprocess.DEVNULL)
    rows = [
        measure("baseline: coffer --version (process start)", [coffer, "--version"], env),
        measure("get, 1,000 items, small KDF (8 MiB, t=1, p=1)", [coffer, "get", "bench/item-500", "--vault", small] + P, env),
        measure("get, 1,000 items, default KDF (256 MiB, t=3, p=4)", [coffer, "get", "bench/item-500", "--vault", default] + P, env, runs=7),
        measure("ls, 1,000 items, small KDF", [coffer, "ls", "--vault", small] + P, env),
    ]
    print("\n## foundation: coffer get (whole process, release build)")
    report(rows, rows[0]["label"])
    kdf_share = rows[2]["median_ms"] - rows[1]["median_ms"]
    print(f"default KDF share of an unlock: ~{kdf_share:.0f} ms; work outside the KDF: ~{rows[1]['median_ms'] - rows[0]['median_ms']:.1f} ms above process start")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
