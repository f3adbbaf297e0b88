#!/usr/bin/env bash
# CofferKit benchmarks (issue 18), on the release build:
#   scripts/bench-cofferkit.sh path/to/release/coffer
# 1. change latency: `coffer-example watch NAME` (Coffer.changes at its
#    default 250 ms interval) runs in the background while `coffer edit`
#    changes NAME $BENCH_CHANGES times (default 40) at irregular intervals;
#    reported: the time from the edit process's exit to the watcher's line.
# 2. open: `coffer-example demo` (Coffer.open + 2 sets + 2 reads) against
#    `coffer --version` (process start) with a session and with the
#    default KDF.
# Needs coffer-example beside coffer (swift build -c release builds both).
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench-cofferkit.sh path/to/release/coffer}")"
EXAMPLE="$(dirname "$COFFER")/coffer-example"
if [ ! -x "$EXAMPLE" ]; then echo "bench-cofferkit: no $EXAMPLE; build it with swift build -c release" >&2; exit 1; fi
DIR="$(mktemp -d /tmp/coffer-bench-kit.XXXXXX)"
trap 'rm -rf "$DIR"' EXIT
export HOME="$DIR/home" XDG_DATA_HOME="$DIR/home/.local/share" XDG_CONFIG_HOME="$DIR/home/.config" XDG_RUNTIME_DIR="$DIR/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_PASSPHRASE COFFER_SESSION
printf 'bench passphrase\n' > "$DIR/pass"; chmod 600 "$DIR/pass"

echo "== CofferKit: Coffer.changes latency and Coffer.open (machine load $(cut -d' ' -f1-3 /proc/loadavg))"
"$COFFER" init --passphrase-file "$DIR/pass" 2>/dev/null
eval "$("$COFFER" unlock --passphrase-file "$DIR/pass" --timeout 2h 2>/dev/null)"
export COFFER_SESSION
"$EXAMPLE" demo >/dev/null

python3 - "$COFFER" "$EXAMPLE" "${BENCH_CHANGES:-40}" <<'PY'
import random, statistics, subprocess, sys, time
coffer, example, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
w = subprocess.Popen([example, "watch", "example/api-key", "--count", str(n)], stdout=subprocess.PIPE, text=True)
assert "watching" in w.stdout.readline()
lat = []
for i in range(n):
    time.sleep(random.uniform(0.05, 0.4))
    subprocess.run([coffer, "edit", "example/api-key", "--field", f"key=ex-bench-{i:06d}-0123456789"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    line = w.stdout.readline()
    lat.append((time.monotonic() - t0) * 1000)
    assert "changed" in line, line
w.wait(timeout=10)
lat.sort()
print(f"  change seen after `coffer edit` exits ({n} edits): median {statistics.median(lat):6.1f} ms"
      f"  p90 {lat[int(0.9 * (n - 1))]:6.1f} ms  max {lat[-1]:6.1f} ms  min {lat[0]:6.1f} ms")
PY

if command -v hyperfine >/dev/null 2>&1; then
  hyperfine -N --style basic --warmup 3 --runs "${BENCH_RUNS:-20}" --export-json "$DIR/hf.json" \
    "$COFFER --version" "$EXAMPLE demo" >/dev/null 2>&1
  python3 - "$DIR/hf.json" "$COFFER" "$EXAMPLE" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
base = res[0]["median"]
for r in res:
    cmd = r["command"].replace(sys.argv[2], "coffer").replace(sys.argv[3], "coffer-example")
    print(f"  {cmd:40s} median {r['median']*1000:7.2f} ms  ({r['median']/base:4.1f}x process start), with a session")
PY
else
  echo "  (hyperfine not installed: open timing skipped)"
fi
unset COFFER_SESSION
start=$(date +%s%N)
for _ in 1 2 3; do COFFER_PASSPHRASE='bench passphrase' "$EXAMPLE" demo >/dev/null; done
echo "  coffer-example demo, default KDF (256 MiB, t=3, p=4), no session: $(( ($(date +%s%N) - start) / 3000000 )) ms per run (mean of 3)"
