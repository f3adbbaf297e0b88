#!/usr/bin/env bash
# Session hot-path benchmarks (issue 3), whole-process medians.
#   scripts/bench-sessions.sh path/to/release/coffer
# Builds a vault of $BENCH_ITEMS items (default 10000) in a temp dir with
# `coffer add` under a session, then measures:
#   1. coffer get NAME        with a session            (target <= 10 ms),
#      also with --field key (the same output), which goes through
#      argument-parser (no fast path)
#   2. coffer add NAME        with a session            (target <= 10 ms, issue 11),
#      also with --expires, which goes through argument-parser (no fast path)
#   3. coffer get NAME        default KDF, no session   (for comparison)
#   plus `coffer --version` (start-up floor) and /bin/true (machine floor).
# Uses hyperfine when installed, else a loop with /usr/bin/time.
set -euo pipefail
COFFER="$(realpath "${1:?usage: bench-sessions.sh path/to/release/coffer}")"
ITEMS="${BENCH_ITEMS:-10000}"
RUNS="${BENCH_RUNS:-50}"
JOBS="${BENCH_JOBS:-$(nproc)}"
DIR="$(mktemp -d /tmp/coffer-bench-sessions.XXXXXX)"
trap 'rm -rf "$DIR"' EXIT
export HOME="$DIR/home" XDG_DATA_HOME="$DIR/home/.local/share" XDG_CONFIG_HOME="$DIR/home/.config" XDG_RUNTIME_DIR="$DIR/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_PASSPHRASE COFFER_SESSION
printf 'bench passphrase\n' > "$DIR/pass"; chmod 600 "$DIR/pass"

echo "coffer:  $COFFER"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "vault:   default KDF (256 MiB, 3 iterations, 4 lanes), $ITEMS items"

"$COFFER" init --passphrase-file "$DIR/pass" 2>/dev/null
eval "$("$COFFER" unlock --passphrase-file "$DIR/pass" --timeout 2h 2>/dev/null)"
export COFFER_SESSION

start=$(date +%s)
# Items are added under the session, $JOBS at a time (SQLite serializes the writes).
seq 1 "$ITEMS" | xargs -P "$JOBS" -I{} sh -c \
  'printf "sk-bench-%s-%s\n" {} "$(head -c 12 /dev/urandom | od -An -tx1 | tr -d " \n")" | "$0" add "bench/item-{}" --type api-key --tag bench 2>/dev/null' "$COFFER"
echo "filled in $(( $(date +%s) - start )) s: $("$COFFER" status --json | grep -o '"itemCount" : [0-9]*')"
NAME="bench/item-$(( ITEMS / 2 ))"

if command -v hyperfine >/dev/null 2>&1; then
  hf() { hyperfine -N --style basic --warmup 5 --runs "$RUNS" --export-json "$DIR/hf.json" "$@" >/dev/null 2>&1
         python3 - "$DIR/hf.json" "$COFFER" "$DIR" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    cmd = r["command"].replace(sys.argv[2], "coffer").replace(sys.argv[3], "$TMP")
    print(f"  {cmd[:58]:58s} median {r['median']*1000:8.2f} ms  min {r['min']*1000:8.2f} ms  cpu {(r['user']+r['system'])*1000:6.1f} ms")
PY
  }
else
  hf() { local prep=true; if [ "${1:-}" = --prepare ]; then prep="$2"; shift 2; fi
         for cmd in "$@"; do
           for _ in $(seq 1 "$RUNS"); do sh -c "$prep" >/dev/null 2>&1; /usr/bin/time -f '%e' sh -c "$cmd >/dev/null 2>&1" 2>&1; done | sort -n | awk -v c="$cmd" '{a[NR]=$1} END {printf "  %-70s median %7.2f ms\n", substr(c,1,70), a[int((NR+1)/2)]*1000}'
         done; }
fi

echo "start-up floor:"
hf "/bin/true" "$COFFER --version"
echo "with a session (COFFER_SESSION set):"
hf "$COFFER get $NAME"
# The same through argument-parser (any option but --vault disables the
# `get NAME` fast path; the api-key's primary field is `key`).
hf "$COFFER get --field key $NAME"
# The same name is added again after each `coffer rm` (not timed).
"$COFFER" add bench/new --type api-key --field key=sk-new </dev/null 2>/dev/null
hf --prepare "$COFFER rm -f bench/new" "$COFFER add bench/new --type api-key --field key=sk-new"
# The same through argument-parser (`--expires` is not a form the add fast path takes).
hf --prepare "$COFFER rm -f bench/new" "$COFFER add bench/new --type api-key --field key=sk-new --expires 2099-01-01"
echo "without a session (default KDF, passphrase from a file):"
RUNS=10 hf "env -u COFFER_SESSION $COFFER get $NAME --passphrase-file $DIR/pass"
