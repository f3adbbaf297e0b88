#!/usr/bin/env bash
# `coffer audit` benchmarks (issue 19): whole-process medians.
#
#   scripts/bench-audit.sh path/to/release/coffer [items]
#
# Builds a vault of $1 items (default 10,000; `coffer-bench fill`, random
# API keys) plus 20 logins with weak, reused passwords, and a sorted
# Have I Been Pwned-format SHA-1 file of HIBP_BYTES (default 1 GB) in /tmp
# that holds those 20 passwords among random hashes (kept between runs as
# /tmp/coffer-bench-hibp-BYTES.txt; delete it to regenerate). Measures,
# with a session (no KDF):
#   coffer --version                 (start-up floor)
#   coffer ls                        (decrypting the metadata, for scale)
#   coffer audit                     target <= 1 s for 10,000 items
#   coffer audit --hibp-file FILE    target <= 2 s more
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench-audit.sh path/to/release/coffer [items]}")"
BENCH="$(dirname "$COFFER")/coffer-bench"
N="${2:-10000}"
RUNS="${RUNS:-10}"
HIBP_BYTES="${HIBP_BYTES:-1000000000}"
HIBP="/tmp/coffer-bench-hibp-$HIBP_BYTES.txt"
W="$(mktemp -d /tmp/coffer-bench-audit.XXXXXX)"
trap 'rm -rf "$W"' EXIT
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION
export COFFER_PASSPHRASE="bench passphrase"

echo "audit: $N items, HIBP file $HIBP_BYTES bytes; machine $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$COFFER" init --kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1 >/dev/null 2>&1
"$BENCH" fill "$N" 2>/dev/null
WEAK=(Password1! qwerty123 letmein2024 dragon!! monkey99 Summer2019 iloveyou1 trustno1 football7 P@ssw0rd)
for i in $(seq 0 19); do
  printf '%s\n' "${WEAK[$((i % 10))]}" | "$COFFER" add "bench/login-$i" --type login --field username=me >/dev/null 2>&1
done
eval "$("$COFFER" unlock --timeout 1h 2>/dev/null)"
export COFFER_SESSION
unset COFFER_PASSPHRASE

if [ ! -s "$HIBP" ] || [ "$(stat -c %s "$HIBP")" -lt "$HIBP_BYTES" ]; then
  start=$(date +%s)
  python3 - "$HIBP" "$HIBP_BYTES" "${WEAK[@]}" <<'PY'
import binascii, hashlib, os, sys
path, size, weak = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
lines = max(1, size // 46)                 # "40 hex:count\r\n" is ~46 bytes
# Sorted by construction: the first 10 hex digits grow with the line
# number, the other 30 are random.
step = (1 << 40) // lines
known = sorted(hashlib.sha1(w.encode()).hexdigest().upper() for w in set(weak))
k = 0
with open(path + ".tmp", "w", buffering=1 << 22) as f:
    batch = 200000
    for b0 in range(0, lines, batch):
        n = min(batch, lines - b0)
        tails = binascii.hexlify(os.urandom(15 * n)).decode().upper()
        out = []
        for j in range(n):
            h = "%010X" % ((b0 + j) * step) + tails[30 * j:30 * j + 30]
            while k < len(known) and known[k] <= h:
                out.append(known[k] + ":%d\r\n" % (1000 + k)); k += 1
            out.append(h + ":%d\r\n" % (1 + (j & 0xfff)))
        f.write("".join(out))
    f.write("".join(x + ":1000\r\n" for x in known[k:]))
os.rename(path + ".tmp", path)
PY
  echo "generated $HIBP ($(stat -c %s "$HIBP") bytes) in $(( $(date +%s) - start )) s"
fi
# Page cache: a search reads the pages it touches from disk the first time.
# The medians below are warm (hyperfine warm-up runs), as on a machine that
# audits regularly; the first run is printed separately. (The page cache is
# not dropped: the machine is shared.)
cold_start=$(date +%s%N)
"$COFFER" audit --hibp-file "$HIBP" >/dev/null 2>&1 || true
echo "first audit with the HIBP file: $(( ($(date +%s%N) - cold_start) / 1000000 )) ms"

hyperfine -N --style basic --warmup 2 --runs "$RUNS" --export-json "$W/hf.json" \
  "$COFFER --version" "$COFFER ls" "$COFFER audit" "$COFFER audit --hibp-file $HIBP" >/dev/null 2>&1
python3 - "$W/hf.json" "$COFFER" "$HIBP" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
base = rs[0]["median"]
for r in rs:
    cmd = r["command"].replace(sys.argv[2], "coffer").replace(sys.argv[3], "$HIBP")
    print(f"  {cmd[:44]:44s} median {r['median']*1000:8.1f} ms  min {r['min']*1000:8.1f} ms  {r['median']/base:6.1f}x start")
print(f"  HIBP lookups add {(rs[3]['median'] - rs[2]['median'])*1000:.0f} ms (median difference)")
PY
"$COFFER" audit --hibp-file "$HIBP" 2>&1 >/dev/null | grep -v "^coffer: hint" | sed 's/^/  /'
