#!/usr/bin/env bash
# Merge and sync benchmarks (issue 5).
#
#   scripts/bench-sync.sh path/to/release/coffer [items] [changed] [overlap]
#
# 1. Two replicas of a vault of ITEMS (default 100,000) items; each changes
#    CHANGED (1,000) items, OVERLAP (100) of them the same ones (concurrent
#    edits, so conflicts). Measured on replica A: `coffer import` of B's full
#    bundle (the merge alone) and `coffer sync DIR` (merge + writing A's own
#    full bundle). Targets: merge <= 5 s, peak memory <= 150 MB.
# 2. `coffer sync DIR` with nothing new on a 10,000-item vault (two replicas'
#    bundles in DIR). Target <= 100 ms.
#
# Vaults are filled with the `coffer-bench fill` and changed with the
# `coffer-bench touch` (one transaction each). Argon2id uses 19 MiB / 2 passes / 1 lane so that the unlock
# does not dominate; the default KDF adds its own memory and time to every
# command that unlocks (sync with nothing new does not unlock at all).
# Before each timed run, A's vault is restored with `cat backup > vault`,
# which keeps the inode (a `cp` would be taken for a copied vault), and A's
# bundle in DIR with it (else A would be taken for a restored backup).
set -euo pipefail
COFFER="${1:?usage: bench-sync.sh path/to/coffer [items] [changed] [overlap]}"
BENCH="$(dirname "$COFFER")/coffer-bench"
N="${2:-100000}"
CHANGED="${3:-1000}"
OVERLAP="${4:-100}"
RUNS="${RUNS:-5}"
W="$(mktemp -d /tmp/coffer-bench-sync.XXXXXX)"
trap 'rm -rf "$W"' EXIT
export HOME="$W/home" XDG_DATA_HOME="$W/home/.local/share" XDG_RUNTIME_DIR="$W/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset COFFER_VAULT COFFER_SESSION
export COFFER_PASSPHRASE="bench passphrase"
KDF=(--kdf-memory 19M --kdf-iterations 2 --kdf-parallelism 1)

median() { python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$1"; }
rss() { # prepare command... -> peak RSS in MB (median of 3 runs)
  local prep="$1"; shift
  local out=()
  for _ in 1 2 3; do
    bash -c "$prep"
    /usr/bin/time -f '%M' -o "$W/time" "$@" >/dev/null 2>&1
    out+=("$(( $(tail -1 "$W/time") / 1024 ))")
  done
  printf '%s\n' "${out[@]}" | sort -n | sed -n 2p
}
hf() { # name prepare command
  hyperfine -N --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null 2>&1 \
    || hyperfine --runs "$RUNS" --warmup 0 --prepare "$2" --export-json "$W/$1.json" "$3" >/dev/null
  median "$W/$1.json"
}

# --- 1. merging two large replicas ---------------------------------------
D="$W/big"; mkdir -p "$D/dir"
A="$D/a.coffer"; B="$D/b.coffer"
"$COFFER" init --vault "$A" "${KDF[@]}" >/dev/null 2>&1
"$BENCH" fill --vault "$A" "$N" 2>/dev/null
"$COFFER" sync --vault "$A" "$D/dir" 2>/dev/null
"$COFFER" clone --vault "$B" "$D/dir/"*.coffer-bundle >/dev/null 2>&1
"$COFFER" sync --vault "$B" "$D/dir" 2>/dev/null
"$BENCH" touch --vault "$A" 0 "$CHANGED" 2>/dev/null
"$BENCH" touch --vault "$B" $((CHANGED - OVERLAP)) $((2 * CHANGED - OVERLAP)) 2>/dev/null
"$COFFER" sync --vault "$B" "$D/dir" 2>/dev/null          # B's segment now holds its changes
# The merge measured is of B's whole state (a full bundle), as a replica
# that has seen nothing of B since its snapshot would merge.
BB="$D/b-full.coffer-bundle"
"$COFFER" export --vault "$B" --out "$BB" 2>/dev/null
AID=$("$COFFER" replicas --vault "$A" --json | python3 -c 'import json,sys; print([r["id"] for r in json.load(sys.stdin)["replicas"] if r["local"]][0])')
cp "$A" "$D/a.bak"
mkdir -p "$D/a-files"; cp "$D/dir/$AID".* "$D/a-files/"
# A's files in DIR go back too: a vault restored behind its own files in
# the folder is a restored backup (docs/sync.md) and would take a new id.
RESTORE="cat $D/a.bak > $A && rm -f $D/dir/$AID.* && cp $D/a-files/* $D/dir/"

t_import=$(hf import "$RESTORE" "$COFFER import --vault $A $BB")
m_import=$(rss "$RESTORE" "$COFFER" import --vault "$A" "$BB")
t_sync=$(hf sync "$RESTORE" "$COFFER sync --vault $A $D/dir")
m_sync=$(rss "$RESTORE" "$COFFER" sync --vault "$A" "$D/dir")
bash -c "$RESTORE"
conflicts=$("$COFFER" sync --vault "$A" "$D/dir" 2>&1 | grep -c 'new conflict' || true)
bundle_mb=$(( $(stat -c %s "$BB") / 1048576 ))

# --- 2. sync with nothing new ----------------------------------------------
S="$W/small"; mkdir -p "$S/dir"
"$COFFER" init --vault "$S/c.coffer" "${KDF[@]}" >/dev/null 2>&1
"$BENCH" fill --vault "$S/c.coffer" 10000 2>/dev/null
"$COFFER" sync --vault "$S/c.coffer" "$S/dir" 2>/dev/null
"$COFFER" clone --vault "$S/d.coffer" "$S/dir/"*.coffer-bundle >/dev/null 2>&1
"$COFFER" sync --vault "$S/d.coffer" "$S/dir" 2>/dev/null
"$COFFER" sync --vault "$S/c.coffer" "$S/dir" 2>/dev/null
hyperfine -N --runs 30 --warmup 3 --export-json "$W/noop.json" "$COFFER sync --vault $S/c.coffer $S/dir" >/dev/null
t_noop_ms=$(python3 -c 'import json,sys; print("%.1f" % (1000*json.load(open(sys.argv[1]))["results"][0]["median"]))' "$W/noop.json")
m_noop=$(rss "true" "$COFFER" sync --vault "$S/c.coffer" "$S/dir")

echo "items=$N changed_each=$CHANGED concurrent=$OVERLAP bundle_MB=$bundle_mb new_conflicts_reported=$conflicts"
printf '%-34s %10s %10s %10s\n' benchmark median_s peak_MB target
printf '%-34s %10s %10s %10s\n' "import B's bundle into A (merge)" "$t_import" "$m_import" "5 s/150 MB"
printf '%-34s %10s %10s %10s\n' "sync A (merge + own bundle)" "$t_sync" "$m_sync" "5 s/150 MB"
printf '%-34s %10s %10s %10s\n' "sync, nothing new, 10k items" "$(python3 -c "print('%.3f' % ($t_noop_ms/1000))")" "$m_noop" "0.1 s"
