#!/usr/bin/env bash
# Integrity and listing benchmarks (issues 11 and 12), whole-process medians
# with hyperfine, release build:
#   scripts/bench-integrity.sh path/to/release/coffer [path/to/baseline/coffer]
# With a second binary (for example main's release build, next to its own
# coffer-bench), every command is timed for both in the same run and the
# ratio printed: the cost of the item records and the vault MAC on
#   1. coffer ls   at $BENCH_ITEMS items (default 10000), with a session  (target <= 25 ms)
#   2. coffer get  at the same size, with a session                       (target: unchanged)
#   3. coffer add  at the same size, with a session                       (target: +<= 1 ms)
#   4. coffer clone of a $BENCH_IMPORT_ITEMS-item full bundle (default 100000): the bulk import
#      path, small KDF                                                     (target: +<= 10 %)
#   5. the same clone by coffer-bench, with and without the integrity data (records and
#      vault-MAC terms) in the same code: wall and CPU ratio              (target: +<= 10 % CPU)
# Each binary fills its own vaults with its own coffer-bench (same folder).
set -euo pipefail
NEW="$(realpath "${1:?usage: bench-integrity.sh path/to/release/coffer [baseline coffer]}")"
BASE="${2:+$(realpath "$2")}"
ITEMS="${BENCH_ITEMS:-10000}"
IMPORT_ITEMS="${BENCH_IMPORT_ITEMS:-100000}"
RUNS="${BENCH_RUNS:-30}"
command -v hyperfine >/dev/null || { echo "bench-integrity: hyperfine is needed (apt-get install hyperfine)"; exit 1; }
DIR="$(mktemp -d /tmp/coffer-bench-integrity.XXXXXX)"
trap 'rm -rf "$DIR"' EXIT
export HOME="$DIR/home" XDG_RUNTIME_DIR="$DIR/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_PASSPHRASE COFFER_SESSION
printf 'bench passphrase\n' > "$DIR/pass"; chmod 600 "$DIR/pass"
SMALL=(--kdf-memory 8M --kdf-iterations 1 --kdf-parallelism 1)

echo "## integrity and listing: coffer $ITEMS items, bulk import $IMPORT_ITEMS items"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"

# setup NAME BINARY: a filled vault and a session for it; prints the session.
setup() {
  local name="$1" bin="$2" v="$DIR/$1.coffer"
  "$bin" init --vault "$v" --passphrase-file "$DIR/pass" "${SMALL[@]}" 2>/dev/null
  "$(dirname "$bin")/coffer-bench" fill --vault "$v" --passphrase-file "$DIR/pass" "$ITEMS" 2>/dev/null
  "$bin" unlock --vault "$v" --passphrase-file "$DIR/pass" --timeout 2h 2>/dev/null | sed -n 's/^export COFFER_SESSION=//p' | tr -d "'\";"
}

declare -A BIN SESSION
BIN[new]="$NEW"; SESSION[new]="$(setup new "$NEW")"
NAMES=(new)
if [ -n "$BASE" ]; then BIN[base]="$BASE"; SESSION[base]="$(setup base "$BASE")"; NAMES=(base new); fi
ITEM="bench/item-$(( ITEMS / 2 ))"

report() {
  python3 - "$DIR/hf.json" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
base = rs[0]["median"]
for r in rs:
    print(f"  {r['command'][:44]:44s} median {r['median']*1000:9.2f} ms  min {r['min']*1000:9.2f} ms  x{r['median']/base:5.2f}")
PY
}

# time LABEL CMD-with-%B-%V-%S [prepare-with-%B-%V-%S]: one hyperfine run over every binary.
time_all() {
  local label="$1" cmd="$2" prep="${3:-}" args=()
  for n in "${NAMES[@]}"; do
    local c="${cmd//%B/${BIN[$n]}}"; c="${c//%V/$DIR/$n.coffer}"; c="${c//%S/${SESSION[$n]}}"; c="${c//%N/$n}"
    if [ -n "$prep" ]; then
      local p="${prep//%B/${BIN[$n]}}"; p="${p//%V/$DIR/$n.coffer}"; p="${p//%S/${SESSION[$n]}}"; p="${p//%N/$n}"
      args+=(--prepare "$p")
    fi
    args+=(-n "$n" "$c")
  done
  echo "$label:"
  hyperfine -N --style none --warmup 3 --runs "$RUNS" --export-json "$DIR/hf.json" "${args[@]}" >/dev/null
  report
}

time_all "ls, $ITEMS items, session" "env COFFER_SESSION=%S %B ls --vault %V"
time_all "get, $ITEMS items, session" "env COFFER_SESSION=%S %B get --vault %V $ITEM"
for n in "${NAMES[@]}"; do env COFFER_SESSION="${SESSION[$n]}" "${BIN[$n]}" add --vault "$DIR/$n.coffer" bench/new --field key=sk-new </dev/null >/dev/null 2>&1; done
time_all "add, $ITEMS items, session" "env COFFER_SESSION=%S %B add --vault %V bench/new --field key=sk-new" \
  "env COFFER_SESSION=%S %B rm -f --vault %V bench/new"

# Bulk import: a full bundle of IMPORT_ITEMS items per binary, cloned.
for n in "${NAMES[@]}"; do
  v="$DIR/$n-big.coffer"
  "${BIN[$n]}" init --vault "$v" --passphrase-file "$DIR/pass" "${SMALL[@]}" 2>/dev/null
  "$(dirname "${BIN[$n]}")/coffer-bench" fill --vault "$v" --passphrase-file "$DIR/pass" "$IMPORT_ITEMS" 2>/dev/null
  "${BIN[$n]}" export --vault "$v" --passphrase-file "$DIR/pass" --out "$DIR/$n-big.cb" 2>/dev/null
  rm -f "$v"
done
RUNS=${BENCH_IMPORT_RUNS:-5} time_all "clone (bulk import), $IMPORT_ITEMS items" \
  "%B clone $DIR/%N-big.cb --vault $DIR/%N-clone.coffer --passphrase-file $DIR/pass" "rm -f $DIR/%N-clone.coffer"

# The same bulk-import code with the item records and vault-MAC terms turned
# off (coffer-bench clone --without-integrity), with the records but no MAC
# terms (--without-mac), and with both (on), in one hyperfine run: issue
# 12's target is +10 % at most. hyperfine reports wall time; user and system
# CPU (hyperfine's means) are printed too (the import uses two threads, so
# CPU is what the integrity data costs). on/off is the records' and the
# MAC's cost together; on/records the vault MAC's own.
NEWBENCH="$(dirname "$NEW")/coffer-bench"
echo "bulk import, same code, integrity data off vs records only vs on, $IMPORT_ITEMS items:"
hyperfine -N --style none --warmup 1 --runs "${BENCH_IMPORT_RUNS:-5}" --export-json "$DIR/hf.json" \
  --prepare "rm -f $DIR/off.coffer" -n off "$NEWBENCH clone $DIR/new-big.cb --vault $DIR/off.coffer --passphrase-file $DIR/pass --without-integrity" \
  --prepare "rm -f $DIR/rec.coffer" -n records "$NEWBENCH clone $DIR/new-big.cb --vault $DIR/rec.coffer --passphrase-file $DIR/pass --without-mac" \
  --prepare "rm -f $DIR/on.coffer" -n on "$NEWBENCH clone $DIR/new-big.cb --vault $DIR/on.coffer --passphrase-file $DIR/pass" >/dev/null
report
python3 - "$DIR/hf.json" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
cpu = {r["command"]: r["user"] + r["system"] for r in rs}
for r in rs:
    print(f"  {r['command'][:44]:44s} CPU (user+sys, mean of the runs) {cpu[r['command']]:7.2f} s  user {r['user']:6.2f} s  sys {r['system']:6.2f} s")
print(f"  CPU ratio on/off (records and MAC): x{cpu['on'] / cpu['off']:.3f}")
print(f"  CPU ratio on/records (the vault MAC alone): x{cpu['on'] / cpu['records']:.3f}")
print(f"  CPU ratio records/off (the item records alone): x{cpu['records'] / cpu['off']:.3f}")
PY
